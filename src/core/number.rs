//! Numbers as JS gives and prints them: whole numbers read from a double or from digits, and doubles printed as JS
//! prints them. Shared by the configuration, ids and the binding's messages.

/// The largest integer a double holds exactly, and so the largest id a JS `number` can carry.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// `n` as a u64 when it is a whole number from 0 to below 2^64, which every such f64 converts to exactly.
pub fn whole(n: f64) -> Option<u64> {
    (n.is_finite() && n.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&n)).then_some(n as u64)
}

/// Text of ASCII digits only (no sign, spaces or anything trailing) as a u64, if it is one and fits.
pub fn digits(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse::<u64>().ok()).flatten()
}

/// A JS number as JS prints it.
pub fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if n == 0.0 {
        "0".into()
    } else if n.abs() >= 1e21 || n.abs() < 1e-6 {
        // JS's exponent form, which keeps 5e-324 and 1e308 short: Rust writes `1e21`, JS `1e+21`.
        let e = format!("{n:e}");
        match e.split_once('e') {
            Some((m, x)) if !x.starts_with('-') => format!("{m}e+{x}"),
            _ => e,
        }
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_js_prints_them() {
        for (n, js) in [
            (5e-324, "5e-324"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (-2e-7, "-2e-7"),
            (1.5, "1.5"),
            (1e20, "100000000000000000000"),
        ] {
            assert_eq!(js_number(n), js);
        }
    }

    #[test]
    fn whole_numbers_and_digits() {
        assert_eq!(whole(0.0), Some(0));
        assert_eq!(whole(MAX_SAFE_INTEGER), Some(9_007_199_254_740_991));
        assert_eq!(whole(18_446_744_073_709_549_568.0), Some(18_446_744_073_709_549_568));
        for bad in [-1.0, 0.5, f64::NAN, f64::INFINITY, 18_446_744_073_709_551_616.0] {
            assert_eq!(whole(bad), None, "{bad}");
        }
        assert_eq!(digits("0042"), Some(42));
        assert_eq!(digits("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "-1", "+1", " 1", "1 ", "1e3", "18446744073709551616"] {
            assert_eq!(digits(bad), None, "{bad:?}");
        }
    }
}
