//! `?page=1&pageSize=50` for every list of the API (`spec/api.md`, "Lists").

use serde::Deserialize;

use crate::error::{ApiError, FieldError};

/// The largest page a client may ask for: keeps one request's cost bounded.
pub const MAX_PAGE_SIZE: u64 = 500;
/// The highest page number: with [`MAX_PAGE_SIZE`] the offset stays far inside the database's
/// signed 64-bit range.
pub const MAX_PAGE: u64 = 1_000_000;
/// The page size when the client does not say.
pub const DEFAULT_PAGE_SIZE: u64 = 50;

/// The paging query parameters; both optional. Unknown parameters are ignored, so a list's
/// own filters can sit beside these (`#[serde(flatten)]`).
#[derive(Clone, Copy, Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1-based page number (default 1, at most 1,000,000).
    #[param(minimum = 1, maximum = 1_000_000)]
    pub page: Option<u64>,
    /// Items per page (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    pub page_size: Option<u64>,
}

/// A validated page request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// 1-based page number.
    pub page: u64,
    /// Items per page.
    pub page_size: u64,
}

impl PageQuery {
    /// Defaults filled in, out-of-range values refused with 422 naming the parameter.
    pub fn validate(self) -> Result<PageRequest, ApiError> {
        let page = self.page.unwrap_or(1);
        let page_size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        let mut errors = Vec::new();
        let between = |max: u64| {
            crate::field_rule::Rule::with(
                "between",
                format!("must be between 1 and {max}"),
                serde_json::json!({ "min": 1, "max": max }),
            )
        };
        if !(1..=MAX_PAGE).contains(&page) {
            errors.push(FieldError::new("page", between(MAX_PAGE)));
        }
        if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
            errors.push(FieldError::new("pageSize", between(MAX_PAGE_SIZE)));
        }
        if errors.is_empty() {
            Ok(PageRequest { page, page_size })
        } else {
            Err(ApiError::validation(errors))
        }
    }
}

impl PageRequest {
    /// Rows to skip before this page.
    pub fn offset(self) -> u64 {
        (self.page - 1) * self.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_parameters_mean_the_first_page_of_fifty() {
        assert_eq!(
            PageQuery::default().validate().unwrap(),
            PageRequest { page: 1, page_size: 50 }
        );
    }

    #[test]
    fn out_of_range_pages_and_page_sizes_are_refused_by_name() {
        let cases = [
            (Some(0), None, "page"),
            (Some(MAX_PAGE + 1), None, "page"),
            (Some(u64::MAX), None, "page"),
            (None, Some(0), "pageSize"),
            (None, Some(501), "pageSize"),
        ];
        for (page, page_size, field) in cases {
            let err = PageQuery { page, page_size }.validate().unwrap_err();
            assert_eq!(err.code, "validation_failed");
            assert_eq!(err.details.unwrap()["fields"][0]["field"], field);
        }
        let largest = PageQuery {
            page: Some(MAX_PAGE),
            page_size: Some(MAX_PAGE_SIZE),
        };
        assert!(largest.validate().is_ok());
    }

    #[test]
    fn the_offset_skips_whole_pages_and_the_largest_fits_a_signed_64_bit_column() {
        assert_eq!(PageRequest { page: 3, page_size: 50 }.offset(), 100);
        let last = PageRequest {
            page: MAX_PAGE,
            page_size: MAX_PAGE_SIZE,
        };
        assert!(i64::try_from(last.offset()).is_ok());
    }
}
