//! `format` values as automata: each known format is a language of decoded strings, written
//! here as an anchored ECMA pattern and compiled like any `pattern`, so the string leaf can
//! intersect it with lengths and patterns.
//!
//! Exactness, format by format (RFC grammars transcribed; approximations listed):
//! - `date` (RFC 3339 full-date): exact, including per-month day counts and Gregorian leap
//!   years for February 29.
//! - `time` (RFC 3339 full-time): `HH:MM:SS(.frac)?(Z|±HH:MM)`, `T`/`Z` in either case.
//!   Leap seconds (`:60`) are exact with a zero offset (only `23:59:60`). Approximation: with
//!   a non-zero offset, `:60` is accepted at any local time, not only where UTC is 23:59.
//! - `date-time`: `date` `T` `time` (same approximation).
//! - `duration` (RFC 3339 Appendix A, as JSON Schema specifies): exact ABNF, upper-case
//!   designators only.
//! - `email` (RFC 5321 Mailbox): dot-atom or quoted local part, `@`, a `hostname`, an IPv4
//!   literal `[1.2.3.4]` or an IPv6 literal `[IPv6:…]`. Approximation: the 64/255 octet length
//!   limits are not enforced.
//! - `hostname` (RFC 1123): dot-separated labels of 1–63 letters, digits and hyphens, not
//!   starting or ending with a hyphen. Approximations: the 253-character total limit and the
//!   IDNA rules for `xn--` labels are not enforced.
//! - `ipv4`: dotted quad, each 0–255 without leading zeros. Exact.
//! - `ipv6` (RFC 4291 text form, as RFC 3986 `IPv6address`): exact, zone ids rejected.
//! - `uuid` (RFC 4122 form): 8-4-4-4-12 hex digits, either case. Exact.
//! - `uri`, `uri-reference` (RFC 3986 `URI`, `URI-reference`): the ABNF transcribed, ASCII
//!   only. Exact.
//! - `iri`, `iri-reference` (RFC 3987): the same grammar with `ucschar` (and `iprivate` in
//!   queries) allowed. Exact.
//! - `uri-template` (RFC 6570, level 4 syntax): exact.
//! - `json-pointer` (RFC 6901), `relative-json-pointer`: exact.
//!
//! Every other format is unknown: [`format_dfa`] returns `None` and the core warns.

use std::sync::OnceLock;

use crate::pattern::dfa::Dfa;
use crate::pattern::pattern_dfa;
use crate::strings::LeafError;

/// Whether `format` is a format this crate lowers (others are the core's warning).
pub(crate) fn is_known_format(format: &str) -> bool {
    format_pattern(format).is_some()
}

/// The automaton of `format`, or `None` if the format is unknown.
///
/// Each format's automaton is built once per process (they take up to tens of milliseconds).
pub(crate) fn format_dfa(format: &str) -> Option<Result<Dfa, LeafError>> {
    static CACHE: [OnceLock<Result<Dfa, LeafError>>; FORMATS.len()] =
        [const { OnceLock::new() }; FORMATS.len()];
    let index = FORMATS.iter().position(|&known| known == format)?;
    let dfa = CACHE[index].get_or_init(|| {
        let pattern = format_pattern(format).unwrap_or_default();
        pattern_dfa(&pattern, false).map_err(|err| LeafError {
            keyword: "format",
            kind: err.kind,
            message: format!("format {format:?}: {}", err.message),
            pattern_index: None,
        })
    });
    Some(dfa.clone())
}

/// The formats [`format_pattern`] knows.
const FORMATS: [&str; 16] = [
    "date",
    "time",
    "date-time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
];

/// The anchored pattern of a known format.
fn format_pattern(format: &str) -> Option<String> {
    let pattern = match format {
        "date" => format!("^{DATE}$"),
        "time" => format!("^{TIME}$"),
        "date-time" => format!("^{DATE}[Tt]{TIME}$"),
        "duration" => format!("^{DURATION}$"),
        "email" => format!("^{}$", email()),
        "hostname" => format!("^{HOSTNAME}$"),
        "ipv4" => format!("^{IPV4}$"),
        "ipv6" => format!("^{}$", ipv6()),
        "uuid" => format!("^{UUID}$"),
        "uri" => format!("^{}$", uri("")),
        "uri-reference" => format!("^(?:{}|{})$", uri(""), relative_ref("")),
        "iri" => format!("^{}$", uri(&ucschar())),
        "iri-reference" => format!("^(?:{}|{})$", uri(&ucschar()), relative_ref(&ucschar())),
        "uri-template" => format!("^{}$", uri_template()),
        "json-pointer" => format!("^{JSON_POINTER}$"),
        "relative-json-pointer" => format!("^(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})$"),
        _ => return None,
    };
    Some(pattern)
}

const DATE: &str = concat!(
    "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])",
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)",
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    // February 29 in Gregorian leap years: divisible by 4, and by 400 when by 100.
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)",
);

/// `partial-time` and `time-offset`; a leap second (`:60`) is allowed at 23:59 with a zero
/// offset, or at any minute with a non-zero offset (where checking that the UTC time is 23:59
/// would take about 1,500 automaton states).
const TIME: &str = concat!(
    "(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?",
    "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    "|23:59:60(?:\\.[0-9]+)?(?:[Zz]|[+-]00:00)",
    "|(?:[01][0-9]|2[0-3]):[0-5][0-9]:60(?:\\.[0-9]+)?",
    "[+-](?:(?:0[1-9]|1[0-9]|2[0-3]):[0-5][0-9]|00:(?:0[1-9]|[1-5][0-9])))",
);

const DURATION: &str = concat!(
    "P(?:[0-9]+W",
    "|(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)",
    "(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?",
    "|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))",
);

const HOSTNAME: &str =
    "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*";

const IPV4: &str = concat!(
    "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
    "(?:\\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}",
);

const UUID: &str = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";

const JSON_POINTER: &str = "(?:/(?:[^~/]|~[01])*)*";

/// RFC 5321 `Mailbox` (see the module docs for the length limits left out).
fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
    let quoted = "\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\"";
    format!(
        "(?:{atext}(?:\\.{atext})*|{quoted})@(?:{HOSTNAME}|\\[{IPV4}\\]|\\[IPv6:{}\\])",
        ipv6()
    )
}

/// RFC 3986 `IPv6address`.
fn ipv6() -> String {
    let h16 = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h16}:{h16}|{IPV4})");
    let before = |n: usize| -> String {
        // `[ *n( h16 ":" ) h16 ]`
        if n == 0 {
            format!("(?:{h16})?")
        } else {
            format!("(?:(?:{h16}:){{0,{n}}}{h16})?")
        }
    };
    let alternatives = [
        format!("(?:{h16}:){{6}}{ls32}"),
        format!("::(?:{h16}:){{5}}{ls32}"),
        format!("{}::(?:{h16}:){{4}}{ls32}", before(0)),
        format!("{}::(?:{h16}:){{3}}{ls32}", before(1)),
        format!("{}::(?:{h16}:){{2}}{ls32}", before(2)),
        format!("{}::{h16}:{ls32}", before(3)),
        format!("{}::{ls32}", before(4)),
        format!("{}::{h16}", before(5)),
        format!("{}::", before(6)),
    ];
    format!("(?:{})", alternatives.join("|"))
}

/// Unreserved and sub-delims characters; classes append `-` last so it stays literal.
const UNRESERVED_SUB_DELIMS: &str = "A-Za-z0-9._~!$&'()*+,;=";
const PCT: &str = "%[0-9A-Fa-f]{2}";

/// RFC 3986 `pchar`; `extra` adds code points to `unreserved` (RFC 3987's `ucschar` for IRIs).
fn pchar(extra: &str) -> String {
    format!("(?:[{UNRESERVED_SUB_DELIMS}{extra}:@-]|{PCT})")
}

/// `"//" authority`, with `authority = [ userinfo "@" ] host [ ":" port ]`.
fn authority(extra: &str) -> String {
    let userinfo = format!("(?:[{UNRESERVED_SUB_DELIMS}{extra}:-]|{PCT})*");
    let ip_literal = format!(
        "\\[(?:{}|v[0-9A-Fa-f]+\\.[{UNRESERVED_SUB_DELIMS}:-]+)\\]",
        ipv6()
    );
    let reg_name = format!("(?:[{UNRESERVED_SUB_DELIMS}{extra}-]|{PCT})*");
    format!("//(?:{userinfo}@)?(?:{ip_literal}|{IPV4}|{reg_name})(?::[0-9]*)?")
}

fn query_fragment(extra: &str) -> String {
    let pchar = pchar(extra);
    // RFC 3987 also allows `iprivate` in queries.
    let private = if extra.is_empty() {
        ""
    } else {
        "\\u{E000}-\\u{F8FF}\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}"
    };
    format!("(?:\\?(?:{pchar}|[/?{private}])*)?(?:#(?:{pchar}|[/?])*)?")
}

/// RFC 3986 `URI`.
fn uri(extra: &str) -> String {
    let pchar = pchar(extra);
    let path_abempty = format!("(?:/{pchar}*)*");
    let path_absolute = format!("/(?:{pchar}+(?:/{pchar}*)*)?");
    let path_rootless = format!("{pchar}+(?:/{pchar}*)*");
    format!(
        "[A-Za-z][A-Za-z0-9+.-]*:(?:{}{path_abempty}|{path_absolute}|{path_rootless}|){}",
        authority(extra),
        query_fragment(extra)
    )
}

/// RFC 3986 `relative-ref`.
fn relative_ref(extra: &str) -> String {
    let pchar = pchar(extra);
    let path_abempty = format!("(?:/{pchar}*)*");
    let path_absolute = format!("/(?:{pchar}+(?:/{pchar}*)*)?");
    let segment_nz_nc = format!("(?:[{UNRESERVED_SUB_DELIMS}{extra}@-]|{PCT})+");
    let path_noscheme = format!("{segment_nz_nc}(?:/{pchar}*)*");
    format!(
        "(?:{}{path_abempty}|{path_absolute}|{path_noscheme}|){}",
        authority(extra),
        query_fragment(extra)
    )
}

/// RFC 3987 `ucschar`, as class contents.
fn ucschar() -> String {
    let mut out = String::from("\\u{A0}-\\u{D7FF}\\u{F900}-\\u{FDCF}\\u{FDF0}-\\u{FFEF}");
    for plane in 1..=14u32 {
        if plane == 14 {
            out.push_str("\\u{E1000}-\\u{EFFFD}");
        } else {
            out.push_str(&format!(
                "\\u{{{:X}}}-\\u{{{:X}}}",
                plane << 16,
                (plane << 16) | 0xFFFD
            ));
        }
    }
    out
}

/// RFC 6570 `URI-Template` (level 4).
fn uri_template() -> String {
    let literal = format!("(?:[\\x21\\x23\\x24\\x26\\x28-\\x3B\\x3D\\x3F-\\x5B\\x5D\\x5F\\x61-\\x7A\\x7E{}\\u{{E000}}-\\u{{F8FF}}\\u{{F0000}}-\\u{{FFFFD}}\\u{{100000}}-\\u{{10FFFD}}]|{PCT})", ucschar());
    let varchar = format!("(?:[A-Za-z0-9_]|{PCT})");
    let varspec = format!("{varchar}(?:\\.?{varchar})*(?::[1-9][0-9]{{0,3}}|\\*)?");
    format!("(?:{literal}|\\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\\}})*")
}

#[cfg(test)]
mod tests;
