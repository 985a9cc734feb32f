//! Who a Telegram user is in dshq: a `telegram:USERID` identity that the config file's
//! `[people]` lists for a person (`alice = ["telegram:123456789"]`). A Telegram user not
//! listed there is refused: being in the chat is not being a reviewer. Apart from the
//! channel's other rules ([`super::telegram`]), which the people directory does not need.

/// Whether `s` is a Telegram user id: digits, a positive number below 2^53 (Telegram's
/// bound), no sign, no leading zero.
pub fn is_user_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 16
        && !s.starts_with('0')
        && s.bytes().all(|b| b.is_ascii_digit())
        && s.parse::<u64>().is_ok_and(|n| n < 1 << 53)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_id_is_a_positive_number_below_2_to_the_53() {
        assert!(is_user_id("123456789") && !is_user_id("0") && !is_user_id("-5"));
        assert!(!is_user_id("9007199254740993") && !is_user_id("alice"));
    }
}
