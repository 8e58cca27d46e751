use super::*;
use proptest::prelude::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).expect("valid quantity")
}

#[test]
fn plain_and_decimal_numbers_parse_to_milli_units() {
    assert_eq!(q("2").milli(), 2000);
    assert_eq!(q("0.5").milli(), 500);
    assert_eq!(q("+1.25").milli(), 1250);
    assert_eq!(q("-3").milli(), -3000);
    assert_eq!(q(".5").milli(), 500);
    assert_eq!(q("1.").milli(), 1000);
    assert_eq!(q("007").milli(), 7000);
}

#[test]
fn decimal_suffixes_scale_by_powers_of_ten() {
    assert_eq!(q("500m").milli(), 500);
    assert_eq!(q("1k").milli(), 1_000_000);
    assert_eq!(q("2M").milli(), 2_000_000_000);
    assert_eq!(q("1G").milli(), 1_000_000_000_000);
    assert_eq!(q("1T").milli(), 10_i128.pow(15));
    assert_eq!(q("1P").milli(), 10_i128.pow(18));
    assert_eq!(q("1E").milli(), 10_i128.pow(21));
}

#[test]
fn binary_suffixes_scale_by_powers_of_1024() {
    assert_eq!(q("1Ki").milli(), 1024 * 1000);
    assert_eq!(q("16Gi").milli(), 16 * (1_i128 << 30) * 1000);
    assert_eq!(q("1Ei").milli(), (1_i128 << 60) * 1000);
    assert_eq!(q("8Ei").milli(), (1_i128 << 63) * 1000);
    assert_eq!(q("0.5Gi").milli(), (1_i128 << 29) * 1000);
    assert_eq!(q("1.5Ki").milli(), 1536 * 1000);
}

#[test]
fn exponents_scale_by_powers_of_ten() {
    assert_eq!(q("1e3").milli(), 1_000_000);
    assert_eq!(q("1.5E2").milli(), 150_000);
    assert_eq!(q("1e-3").milli(), 1);
    assert_eq!(q("2E+6").milli(), 2_000_000_000);
    assert_eq!(q("1e30").milli(), 10_i128.pow(33));
}

#[test]
fn values_finer_than_a_milli_unit_round_up() {
    assert_eq!(q("1n").milli(), 1);
    assert_eq!(q("1500u").milli(), 2);
    assert_eq!(q("0.0001").milli(), 1);
    assert_eq!(q("-0.0001").milli(), -1);
    assert_eq!(q("1e-100").milli(), 1);
    assert_eq!(q("0.0000000000000000000000000000000000000000000001Ki").milli(), 1);
}

#[test]
fn a_small_exponent_on_a_long_mantissa_is_not_mistaken_for_a_sub_milli_value() {
    // 10^66 × 10^-64 = 100: the exponent alone looks tiny, the digits make up for it.
    let text = format!("1{}e-64", "0".repeat(66));
    assert_eq!(q(&text).milli(), 100_000);
}

#[test]
fn a_large_exponent_on_a_tiny_fraction_is_not_mistaken_for_an_out_of_range_value() {
    // 10^-63 × 10^66 = 1000: the exponent alone looks huge, the leading zeros make up for it.
    let text = format!("0.{}1e66", "0".repeat(62));
    assert_eq!(q(&text).milli(), 1_000_000);
    assert!(matches!(
        Quantity::parse(&format!("0.{}1e99", "0".repeat(62))),
        Err(QuantityError::OutOfRange { .. })
    ));
    assert_eq!(q(&format!("0.{}1e-99", "0".repeat(62))).milli(), 1);
}

#[test]
fn zero_in_any_spelling_is_zero() {
    for s in ["0", "0m", "0Gi", "0e9", "-0", "0.000", "000"] {
        assert!(q(s).is_zero(), "{s}");
    }
}

#[test]
fn malformed_input_is_rejected_with_the_input_named() {
    for s in [
        "", "abc", "1.2.3", "--1", "1 Gi", " 1", "1Gb", "4K", "1e", "1e+", ".", "m", "1ee3", "0x10",
    ] {
        let err = Quantity::parse(s).expect_err(s);
        if !s.is_empty() {
            assert!(err.to_string().contains(&format!("{s:?}")), "{err} names {s:?}");
        }
    }
}

#[test]
fn values_beyond_the_range_are_rejected() {
    assert!(matches!(Quantity::parse("1e34"), Err(QuantityError::OutOfRange { .. })));
    assert!(Quantity::parse("1e33").is_ok());
    assert!(matches!(
        Quantity::parse("99999999999999999999999999999999999999999999Ei"),
        Err(QuantityError::OutOfRange { .. })
    ));
    assert!(matches!(
        Quantity::parse("1e999999999999999999999"),
        Err(QuantityError::OutOfRange { .. })
    ));
}

#[test]
fn formatting_is_kubernetes_canonical() {
    let cases = [
        ("1.5", "1500m"),
        ("1500m", "1500m"),
        ("2Gi", "2Gi"),
        ("2048Mi", "2Gi"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("1k", "1k"),
        ("1000000", "1M"),
        ("0.5Gi", "512Mi"),
        ("1.5Ki", "1536"),
        ("512Ki", "512Ki"),
        ("100m", "100m"),
        ("0", "0"),
        ("-1500m", "-1500m"),
        ("1e3", "1e3"),
        ("1.5", "1500m"),
        ("1.5e0", "1500e-3"),
        ("4", "4"),
        ("1E", "1E"),
        ("1Ei", "1Ei"),
        ("1000E", "1000E"),
        ("1e21", "1e21"),
        ("1e30", "1e30"),
        ("-1.5e24", "-1500e21"),
    ];
    for (input, canonical) in cases {
        assert_eq!(q(input).to_string(), canonical, "{input}");
    }
}

#[test]
fn equality_ignores_the_format() {
    assert_eq!(q("1k"), q("1000"));
    assert_eq!(q("1e3"), q("1k"));
    assert_eq!(q("1Ki"), q("1024"));
    assert!(q("1Gi") > q("1G"));
}

#[test]
fn checked_arithmetic_reports_overflow() {
    let big = q("1e30");
    assert!(big.checked_add(big).is_ok());
    let near = Quantity::from_milli(MAX_MILLI, QuantityFormat::DecimalSi).expect("in range");
    assert!(near.checked_add(q("1m")).is_err());
    assert!(near.checked_mul(2).is_err());
    assert_eq!(q("2Gi").checked_mul(3).expect("fits").to_string(), "6Gi");
    assert_eq!(q("0").checked_add(q("1Gi")).expect("fits").to_string(), "1Gi");
    assert_eq!(q("3").checked_sub(q("500m")).expect("fits").to_string(), "2500m");
}

#[test]
fn quantities_serialize_as_strings_and_accept_integers() {
    assert_eq!(serde_json::to_string(&q("16Gi")).expect("serializes"), "\"16Gi\"");
    let parsed: Quantity = serde_json::from_str("\"500m\"").expect("string");
    assert_eq!(parsed.milli(), 500);
    let parsed: Quantity = serde_json::from_str("4").expect("integer");
    assert_eq!(parsed.milli(), 4000);
    let err = serde_json::from_str::<Quantity>("\"4 cores\"").expect_err("bad");
    assert!(err.to_string().contains("4 cores"));
    assert!(serde_json::from_str::<Quantity>("1.5").is_err());
}

fn any_format() -> impl Strategy<Value = QuantityFormat> {
    prop_oneof![
        Just(QuantityFormat::DecimalSi),
        Just(QuantityFormat::BinarySi),
        Just(QuantityFormat::DecimalExponent)
    ]
}

fn any_milli() -> impl Strategy<Value = i128> {
    prop_oneof![
        -1_000_000_i128..1_000_000,
        any::<i64>().prop_map(i128::from),
        (-MAX_MILLI..=MAX_MILLI),
        (0_u32..7, 1_i128..4096).prop_map(|(p, m)| m * 1024_i128.pow(p) * 1000),
        (0_u32..30, 1_i128..1000).prop_map(|(p, m)| m * 10_i128.pow(p)),
    ]
}

proptest! {
    #[test]
    fn parse_of_format_is_identity(milli in any_milli(), format in any_format()) {
        let quantity = Quantity::from_milli(milli, format).expect("in range");
        let text = quantity.to_string();
        let back = Quantity::parse(&text).expect("canonical text parses");
        prop_assert_eq!(back, quantity);
        // The text may change once (a binary value such as 2000 re-reads as decimal "2k",
        // exactly as in Kubernetes) but is stable from then on.
        let normal = back.to_string();
        prop_assert_eq!(Quantity::parse(&normal).expect("parses").to_string(), normal);
    }

    #[test]
    fn order_of_addition_does_not_matter(values in proptest::collection::vec(any::<i64>(), 0..20), seed in any::<u64>()) {
        let quantities: Vec<Quantity> = values.iter().map(|v| Quantity::from_milli(i128::from(*v), QuantityFormat::DecimalSi).expect("in range")).collect();
        let forward = quantities.iter().try_fold(Quantity::ZERO, |acc, x| acc.checked_add(*x)).expect("no overflow");
        let mut shuffled = quantities.clone();
        // A deterministic shuffle driven by the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let backward = shuffled.iter().rev().try_fold(Quantity::ZERO, |acc, x| acc.checked_add(*x)).expect("no overflow");
        prop_assert_eq!(forward, backward);
    }

    #[test]
    fn decimal_strings_parse_exactly(int in 0_u64..1_000_000_000, frac in 0_u32..1000) {
        let text = format!("{int}.{frac:03}");
        let parsed = Quantity::parse(&text).expect("valid");
        prop_assert_eq!(parsed.milli(), i128::from(int) * 1000 + i128::from(frac));
    }
}

/// The positive pattern with its repetitions bounded, so generated strings stay near the
/// schema's maximum length (16) instead of being mostly rejected for it.
fn bounded_positive_pattern() -> String {
    crate::scheduling::POSITIVE_QUANTITY_PATTERN
        .trim_start_matches('^')
        .trim_end_matches('$')
        .replace('*', "{0,5}")
        .replace('+', "{1,5}")
}

proptest! {
    /// What the OpenAPI document promises for a default request (schemathesis generates from
    /// it) is accepted: every string the pattern allows, up to its maximum length, parses to a
    /// quantity above zero.
    #[test]
    fn every_string_of_the_positive_pattern_is_a_quantity_above_zero(
        text in proptest::string::string_regex(&bounded_positive_pattern()).expect("a regex")
    ) {
        prop_assume!(text.len() <= crate::scheduling::POSITIVE_QUANTITY_MAX_LENGTH);
        prop_assert!(crate::scheduling::is_plain_positive_quantity(&text), "{text:?}");
        let parsed = Quantity::parse(&text);
        prop_assert!(parsed.is_ok(), "{text:?}: {parsed:?}");
        let parsed = parsed.unwrap();
        prop_assert!(parsed.milli() > 0, "{text:?} is not above zero");
        // What the server answers (and stores, and reads back) is what was written.
        let default = crate::scheduling::DefaultQuantity::parse(&text).expect("accepted");
        prop_assert_eq!(default.value(), parsed);
        let json = serde_json::to_string(&default).expect("serializes");
        prop_assert_eq!(&json, &format!("{text:?}"));
        let back: crate::scheduling::DefaultQuantity = serde_json::from_str(&json).expect("reads back");
        prop_assert_eq!(back, default);
    }

    /// The hand-written check the server applies accepts exactly what the documented pattern
    /// and maximum length allow.
    #[test]
    fn the_default_request_check_agrees_with_the_documented_pattern(
        text in "[0-9.+eEmkMGTPi-]{0,18}"
    ) {
        let regex = regex::Regex::new(crate::scheduling::POSITIVE_QUANTITY_PATTERN).expect("a regex");
        let documented = regex.is_match(&text) && text.len() <= crate::scheduling::POSITIVE_QUANTITY_MAX_LENGTH;
        prop_assert_eq!(crate::scheduling::is_plain_positive_quantity(&text), documented, "{:?}", text);
    }
}

#[test]
fn the_positive_pattern_refuses_zero_and_the_empty_string() {
    let regex = regex::Regex::new(crate::scheduling::POSITIVE_QUANTITY_PATTERN).expect("a regex");
    let pattern = |text: &str| regex.is_match(text);
    for text in ["", "0", "000", "0.0", ".0", "0m", "-1", "+1", "1e3", "1.", "."] {
        assert!(!pattern(text), "{text:?} should not match");
        assert!(
            !crate::scheduling::is_plain_positive_quantity(text),
            "{text:?} should be refused"
        );
    }
    for text in ["1", "0.5", ".5", "500m", "16Gi", "007", "1.5Ki", "2E"] {
        assert!(pattern(text), "{text:?} should match");
        assert!(
            crate::scheduling::is_plain_positive_quantity(text),
            "{text:?} should be accepted"
        );
    }
}

#[cfg(feature = "openapi")]
#[test]
fn the_openapi_document_states_the_positive_pattern() {
    use utoipa::PartialSchema;
    let schema = serde_json::to_value(crate::scheduling::DefaultQuantity::schema()).expect("json");
    assert_eq!(schema["pattern"], crate::scheduling::POSITIVE_QUANTITY_PATTERN);
    assert_eq!(schema["maxLength"], crate::scheduling::POSITIVE_QUANTITY_MAX_LENGTH);
}
