//! Kubernetes resource quantities (`"500m"`, `"16Gi"`, `"1e3"`), parsed and formatted exactly.
//!
//! Every value is held as an `i128` number of *milli-units*, so sums and comparisons are exact
//! and never touch floating point. Parsing follows `k8s.io/apimachinery/pkg/api/resource`:
//! plain and decimal numbers, decimal SI suffixes (`n u m k M G T P E`), binary SI suffixes
//! (`Ki Mi Gi Ti Pi Ei`) and decimal exponents (`1e3`, `1.5E2`). Formatting is Kubernetes'
//! canonical form: an integer mantissa with the largest suffix that keeps it integral, in the
//! format (decimal SI, binary SI, exponent) the value was written in.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The largest magnitude a [`Quantity`] may hold, in milli-units (10^33 units).
///
/// Far above any real cluster resource (`1Ei` ≈ 1.15·10^18), yet low enough (i128 reaches
/// 1.7·10^38) that adding or subtracting two in-range quantities never overflows `i128`; checked
/// arithmetic reports [`QuantityError::OutOfRange`] past the bound. Keeping every value inside it
/// is what makes `parse(format(q)) == q` hold for every quantity.
pub const MAX_MILLI: i128 = 1_000_000_000_000_000_000_000_000_000_000_000_000;

/// Why a quantity could not be parsed or computed. Parse errors carry the input verbatim so the
/// API can name the offending value in its 422 answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The input was the empty string.
    #[error("empty string is not a quantity")]
    Empty,
    /// The input does not have the shape `[+-]number[suffix]`.
    #[error("{input:?} is not a Kubernetes quantity")]
    Invalid {
        /// The rejected input.
        input: String,
    },
    /// The number parsed but its suffix is unknown (e.g. `"4K"`, `"1Gb"`).
    #[error("{input:?} has an unknown suffix {suffix:?}")]
    UnknownSuffix {
        /// The rejected input.
        input: String,
        /// The part after the number.
        suffix: String,
    },
    /// The value does not fit in ±10^33 units.
    #[error("{input:?} is out of range (at most 10^33 in magnitude)")]
    OutOfRange {
        /// The rejected input, or a description of the computation that overflowed.
        input: String,
    },
}

/// How a quantity was written, which decides how it is formatted back (as Kubernetes does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum QuantityFormat {
    /// `500m`, `2`, `1k`, `16G`.
    #[default]
    DecimalSi,
    /// `16Gi`, `512Mi`; values below 1024 or with a fraction are written as decimal SI.
    BinarySi,
    /// `1e3`, `1500e-3`.
    DecimalExponent,
}

/// An exact Kubernetes quantity: a signed number of milli-units plus the format it prints in.
///
/// Equality, ordering and hashing look at the value only: `"1k"`, `"1000"` and `"1e3"` are equal.
#[derive(Clone, Copy, Default)]
pub struct Quantity {
    milli: i128,
    format: QuantityFormat,
}

impl Quantity {
    /// Zero, printed `"0"`.
    pub const ZERO: Quantity = Quantity {
        milli: 0,
        format: QuantityFormat::DecimalSi,
    };

    /// A quantity of `milli` milli-units in the given format, or `OutOfRange` past [`MAX_MILLI`].
    pub fn from_milli(milli: i128, format: QuantityFormat) -> Result<Self, QuantityError> {
        if milli.abs() > MAX_MILLI {
            return Err(QuantityError::OutOfRange {
                input: format!("{milli}m"),
            });
        }
        Ok(Quantity { milli, format })
    }

    /// A quantity of `milli` milli-units clamped into ±[`MAX_MILLI`]; used where a saturated
    /// internal sum is reported back (a clamped value still exceeds every realistic limit).
    pub fn from_milli_saturating(milli: i128, format: QuantityFormat) -> Self {
        Quantity {
            milli: milli.clamp(-MAX_MILLI, MAX_MILLI),
            format,
        }
    }

    /// A whole number of units in decimal SI (`Quantity::from_units(4)` prints `"4"`).
    pub fn from_units(units: i64) -> Self {
        Quantity {
            milli: i128::from(units) * 1000,
            format: QuantityFormat::DecimalSi,
        }
    }

    /// A whole number of bytes in binary SI (`Quantity::from_bytes(1 << 30)` prints `"1Gi"`).
    pub fn from_bytes(bytes: i64) -> Self {
        Quantity {
            milli: i128::from(bytes) * 1000,
            format: QuantityFormat::BinarySi,
        }
    }

    /// The exact value in milli-units.
    pub fn milli(&self) -> i128 {
        self.milli
    }

    /// The format the value prints in.
    pub fn format_kind(&self) -> QuantityFormat {
        self.format
    }

    /// True for zero (of any format).
    pub fn is_zero(&self) -> bool {
        self.milli == 0
    }

    /// True for values above zero; only positive requests count for placement and domains.
    pub fn is_positive(&self) -> bool {
        self.milli > 0
    }

    /// Parses a Kubernetes quantity string exactly. Values finer than a milli-unit (`"1n"`,
    /// `"0.0001"`) are rounded up in magnitude to the next milli-unit, as Kubernetes'
    /// `MilliValue` does.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        parse_quantity(input)
    }

    /// `self + other`, keeping `self`'s format (or `other`'s when `self` is zero, so that a sum
    /// started from zero prints like its first term). Fails past [`MAX_MILLI`].
    pub fn checked_add(self, other: Quantity) -> Result<Quantity, QuantityError> {
        let format = if self.milli == 0 { other.format } else { self.format };
        let sum = self
            .milli
            .checked_add(other.milli)
            .ok_or_else(|| overflow(&self, "+", &other))?;
        Quantity::from_milli(sum, format).map_err(|_| overflow(&self, "+", &other))
    }

    /// `self - other`, keeping `self`'s format. Fails past [`MAX_MILLI`].
    pub fn checked_sub(self, other: Quantity) -> Result<Quantity, QuantityError> {
        let format = if self.milli == 0 { other.format } else { self.format };
        let diff = self
            .milli
            .checked_sub(other.milli)
            .ok_or_else(|| overflow(&self, "-", &other))?;
        Quantity::from_milli(diff, format).map_err(|_| overflow(&self, "-", &other))
    }

    /// `self × factor` (replicas × per-replica request). Fails past [`MAX_MILLI`].
    pub fn checked_mul(self, factor: i64) -> Result<Quantity, QuantityError> {
        let product = self
            .milli
            .checked_mul(i128::from(factor))
            .filter(|p| p.abs() <= MAX_MILLI)
            .ok_or_else(|| QuantityError::OutOfRange {
                input: format!("{self} × {factor}"),
            })?;
        Ok(Quantity {
            milli: product,
            format: self.format,
        })
    }
}

fn overflow(a: &Quantity, op: &str, b: &Quantity) -> QuantityError {
    QuantityError::OutOfRange {
        input: format!("{a} {op} {b}"),
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.milli == other.milli
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.milli.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.milli.cmp(&other.milli)
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({self})")
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

/// Decimal SI suffixes by power of 1000 (index 0 = milli).
const DECIMAL_SUFFIXES: [&str; 8] = ["m", "", "k", "M", "G", "T", "P", "E"];
/// Binary SI suffixes by power of 1024.
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

impl fmt::Display for Quantity {
    /// Kubernetes' canonical form: integer mantissa, largest suffix that keeps it integral.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.milli == 0 {
            return f.write_str("0");
        }
        let sign = if self.milli < 0 { "-" } else { "" };
        let magnitude = self.milli.unsigned_abs();
        // Binary SI only for whole values of at least 1024 (Kubernetes switches smaller or
        // fractional values to decimal SI to avoid confusing output such as "0.5Ki").
        if self.format == QuantityFormat::BinarySi && magnitude.is_multiple_of(1000) && magnitude >= 1_024_000 {
            let mut units = magnitude / 1000;
            let mut power = 0;
            while power + 1 < BINARY_SUFFIXES.len() && units.is_multiple_of(1024) {
                units /= 1024;
                power += 1;
            }
            return write!(f, "{sign}{units}{}", BINARY_SUFFIXES[power]);
        }
        // Decimal: mantissa × 1000^(power-1) with power 0 = milli. Suffixes end at `E`, but an
        // exponent has no such cap (Kubernetes prints 10^21 as "1e21", not "1000e18").
        let max_power = match self.format {
            QuantityFormat::DecimalExponent => usize::MAX,
            _ => DECIMAL_SUFFIXES.len() - 1,
        };
        let mut mantissa = magnitude;
        let mut power = 0;
        while power < max_power && mantissa.is_multiple_of(1000) {
            mantissa /= 1000;
            power += 1;
        }
        if self.format == QuantityFormat::DecimalExponent {
            let exponent = 3 * (power as i32 - 1);
            if exponent == 0 {
                write!(f, "{sign}{mantissa}")
            } else {
                write!(f, "{sign}{mantissa}e{exponent}")
            }
        } else {
            write!(f, "{sign}{mantissa}{}", DECIMAL_SUFFIXES[power])
        }
    }
}

fn parse_quantity(input: &str) -> Result<Quantity, QuantityError> {
    if input.is_empty() {
        return Err(QuantityError::Empty);
    }
    let invalid = || QuantityError::Invalid {
        input: input.to_owned(),
    };
    let bytes = input.as_bytes();
    let mut pos = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            pos += 1;
            true
        }
        Some(b'+') => {
            pos += 1;
            false
        }
        _ => false,
    };
    let int_start = pos;
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let int_digits = &input[int_start..pos];
    let mut frac_digits = "";
    if pos < bytes.len() && bytes[pos] == b'.' {
        pos += 1;
        let frac_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        frac_digits = &input[frac_start..pos];
    }
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(invalid());
    }
    let suffix = &input[pos..];
    let (format, scale) = match suffix {
        "" => (QuantityFormat::DecimalSi, Scale::Decimal(0)),
        "n" => (QuantityFormat::DecimalSi, Scale::Decimal(-9)),
        "u" => (QuantityFormat::DecimalSi, Scale::Decimal(-6)),
        "m" => (QuantityFormat::DecimalSi, Scale::Decimal(-3)),
        "k" => (QuantityFormat::DecimalSi, Scale::Decimal(3)),
        "M" => (QuantityFormat::DecimalSi, Scale::Decimal(6)),
        "G" => (QuantityFormat::DecimalSi, Scale::Decimal(9)),
        "T" => (QuantityFormat::DecimalSi, Scale::Decimal(12)),
        "P" => (QuantityFormat::DecimalSi, Scale::Decimal(15)),
        "E" => (QuantityFormat::DecimalSi, Scale::Decimal(18)),
        "Ki" => (QuantityFormat::BinarySi, Scale::Binary(1)),
        "Mi" => (QuantityFormat::BinarySi, Scale::Binary(2)),
        "Gi" => (QuantityFormat::BinarySi, Scale::Binary(3)),
        "Ti" => (QuantityFormat::BinarySi, Scale::Binary(4)),
        "Pi" => (QuantityFormat::BinarySi, Scale::Binary(5)),
        "Ei" => (QuantityFormat::BinarySi, Scale::Binary(6)),
        s if s.starts_with(['e', 'E']) => {
            let exp = parse_exponent(&s[1..]).ok_or_else(|| QuantityError::UnknownSuffix {
                input: input.to_owned(),
                suffix: s.to_owned(),
            })?;
            (QuantityFormat::DecimalExponent, Scale::Decimal(exp))
        }
        s => {
            return Err(QuantityError::UnknownSuffix {
                input: input.to_owned(),
                suffix: s.to_owned(),
            });
        }
    };
    let out_of_range = || QuantityError::OutOfRange {
        input: input.to_owned(),
    };
    // Leading zeros of the integer part and trailing zeros of the fraction carry no value;
    // dropping them keeps the digit arithmetic below within i128 for any spelling.
    let int_digits = int_digits.trim_start_matches('0');
    let frac_digits = frac_digits.trim_end_matches('0');
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Ok(Quantity { milli: 0, format });
    }
    let (magnitude, inexact) = match scale {
        Scale::Decimal(exp) => {
            // value × 1000 = digits shifted left by exp + 3 places.
            shifted_decimal(int_digits, frac_digits, exp.saturating_add(3)).ok_or_else(out_of_range)?
        }
        Scale::Binary(power) => {
            // value × 1000 = (int + 0.frac) × 1024^power × 1000.
            let factor = 1024_i128.pow(power) * 1000;
            let int_value = digits_value(int_digits).ok_or_else(out_of_range)?;
            let whole = int_value.checked_mul(factor).ok_or_else(out_of_range)?;
            let (frac_floor, frac_inexact) = fraction_times(frac_digits, factor);
            (whole.checked_add(frac_floor).ok_or_else(out_of_range)?, frac_inexact)
        }
    };
    // Sub-milli remainders round up in magnitude (Kubernetes' MilliValue rounds up).
    let magnitude = if inexact { magnitude + 1 } else { magnitude };
    if magnitude > MAX_MILLI {
        return Err(out_of_range());
    }
    Ok(Quantity {
        milli: if negative { -magnitude } else { magnitude },
        format,
    })
}

/// How the suffix scales the number.
enum Scale {
    /// × 10^exp.
    Decimal(i64),
    /// × 1024^power.
    Binary(u32),
}

/// Parses the signed exponent after `e`/`E`; `None` when it is not `[+-]?digits`. Absurdly long
/// exponents saturate, which the caller turns into out-of-range (or a sub-milli round-up).
fn parse_exponent(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut value: i64 = 0;
    for b in digits.bytes() {
        value = value.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    Some(if negative { -value } else { value })
}

/// The integer value of a digit string, or `None` when it exceeds i128.
fn digits_value(digits: &str) -> Option<i128> {
    digits
        .bytes()
        .try_fold(0_i128, |acc, b| acc.checked_mul(10)?.checked_add(i128::from(b - b'0')))
}

/// `int.frac × 10^shift`, split into its integer part and whether a non-zero fraction remains;
/// `None` when the integer part exceeds `i128`.
///
/// The magnitude depends on where the decimal point lands among the digits, not on `shift`
/// alone (`"1000e-3"` is 1, `"0.001e3"` is 1), so no shortcut is taken on the exponent: the
/// work stays bounded anyway, since the digit loop runs once per input digit and the padding
/// never needs more than 40 multiplications (10^40 exceeds `i128`).
fn shifted_decimal(int_digits: &str, frac_digits: &str, shift: i64) -> Option<(i128, bool)> {
    // Position of the decimal point in all digits; saturates for absurd exponents, which then
    // overflow (large) or leave every digit behind the point (small).
    let point = (int_digits.len() as i64).saturating_add(shift);
    let all = int_digits.bytes().chain(frac_digits.bytes());
    let total = int_digits.len() + frac_digits.len();
    let mut value: i128 = 0;
    let mut inexact = false;
    for (i, b) in all.enumerate() {
        if (i as i64) < point {
            value = value.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        } else if b != b'0' {
            inexact = true;
        }
    }
    // Digits missing before the decimal point are zeros (e.g. "12" shifted by 3 = 12000). A
    // non-zero value overflows within 40 steps; zero stays zero however far it is shifted.
    let pad = point.saturating_sub(total as i64);
    for _ in 0..pad.clamp(0, 40) {
        value = value.checked_mul(10)?;
    }
    Some((value, inexact))
}

/// `floor(0.frac × factor)` and whether the product had a non-zero fraction, for any number of
/// fraction digits, without big integers (Horner's rule from the last digit, tracking only the
/// integer part and a "something was left over" flag).
fn fraction_times(frac_digits: &str, factor: i128) -> (i128, bool) {
    let mut floor: i128 = 0;
    let mut inexact = false;
    for b in frac_digits.bytes().rev() {
        // x ← (digit × factor + x) / 10; factor ≤ 1024^6·1000 keeps this far inside i128.
        let numerator = i128::from(b - b'0') * factor + floor;
        if numerator % 10 != 0 {
            inexact = true;
        }
        floor = numerator / 10;
    }
    (floor, inexact)
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    /// Accepts quantity strings and, as Kubernetes does, plain JSON integers.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct QuantityVisitor;
        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes quantity string such as \"500m\" or \"16Gi\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity::from_units(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity {
                    milli: i128::from(v) * 1000,
                    format: QuantityFormat::DecimalSi,
                })
            }
        }
        deserializer.deserialize_any(QuantityVisitor)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Quantity {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "A Kubernetes resource quantity: a number with an optional suffix \
                 (m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3).",
            ))
            .examples(["500m", "16Gi", "2"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Quantity {}

#[cfg(test)]
mod tests;
