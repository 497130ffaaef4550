//! Forgiving field decoders for the closed server's JSON: a field of an unexpected type
//! becomes `None` instead of failing the whole batch, because one failed decode in
//! `getupdates` would lose every message of that batch (the server never replays).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Reads a 64-bit id from a number or a decimal string. Negative numbers keep their bit
/// pattern, so distinct ids stay distinct. Goes through `serde_json::Value`, which stores
/// integers exactly (never as f64).
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_i64().map(|i| i as u64)),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    })
}

/// Reads a signed integer from a number (floats truncated) or a decimal string.
pub(crate) fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    })
}

/// Reads a string, accepting a number in its place (some ids are declared as strings but
/// may come as numbers).
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// Like [`opt_string`] but an absent or odd value becomes the empty string.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    opt_string(d).map(Option::unwrap_or_default)
}

/// Reads a boolean, accepting 0/1.
pub(crate) fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => Some(b),
        Value::Number(n) => n.as_i64().map(|i| i != 0),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "super::opt_u64")]
        id: Option<u64>,
        #[serde(default, deserialize_with = "super::opt_i64")]
        n: Option<i64>,
        #[serde(default, deserialize_with = "super::opt_string")]
        s: Option<String>,
    }

    fn probe(json: &str) -> Probe {
        serde_json::from_str(json).expect("probe decodes")
    }

    #[test]
    fn u64_above_2_pow_53_is_exact() {
        let p = probe(r#"{"id":7492913259736648968}"#);
        assert_eq!(p.id, Some(7_492_913_259_736_648_968));
        // 2^53 + 1 is the first integer an f64 cannot hold.
        let p = probe(r#"{"id":9007199254740993}"#);
        assert_eq!(p.id, Some(9_007_199_254_740_993));
        assert_eq!(probe(r#"{"id":"18446744073709551615"}"#).id, Some(u64::MAX));
        assert_eq!(probe(r#"{"id":-1}"#).id, Some(u64::MAX));
        assert_eq!(probe(r#"{"id":null}"#).id, None);
        assert_eq!(probe(r#"{"id":{}}"#).id, None);
        assert_eq!(probe("{}").id, None);
    }

    #[test]
    fn odd_types_become_none() {
        let p = probe(r#"{"n":"12","s":34}"#);
        assert_eq!((p.n, p.s.as_deref()), (Some(12), Some("34")));
        let p = probe(r#"{"n":[1],"s":{"a":1}}"#);
        assert_eq!((p.n, p.s), (None, None));
        assert_eq!(probe(r#"{"n":1.9}"#).n, Some(1));
    }
}
