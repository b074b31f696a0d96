//! Format tests: each format's automaton on valid and invalid samples (many taken from the
//! cases the JSON Schema Test Suite checks).

#![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

use crate::formats::{format_dfa, is_known_format};

fn check(format: &str, accept: &[&str], reject: &[&str]) {
    let dfa = format_dfa(format)
        .expect("known format")
        .unwrap_or_else(|e| panic!("{format}: {e}"));
    for text in accept {
        assert!(dfa.accepts(text), "{format}: should accept {text:?}");
    }
    for text in reject {
        assert!(!dfa.accepts(text), "{format}: should reject {text:?}");
    }
}

#[test]
fn dates() {
    check(
        "date",
        &[
            "1963-06-19",
            "2020-01-31",
            "2020-02-29",
            "2000-02-29",
            "2021-04-30",
            "0000-02-29",
        ],
        &[
            "2020-01-32",
            "2021-02-29",
            "1900-02-29",
            "2020-04-31",
            "2020-13-01",
            "06/19/1963",
            "2013-350",
            "1998-1-20",
            "1963-06-1\u{966}",
            "2020-00-10",
        ],
    );
}

#[test]
fn times() {
    check(
        "time",
        &[
            "08:30:06Z",
            "23:59:60Z",
            "08:30:06.283185Z",
            "08:30:06+00:20",
            "08:30:06-08:00",
            "08:30:06z",
        ],
        &[
            "08:30:06 PST",
            "01:01:01,1111",
            "12:00:00",
            "24:00:00Z",
            "08:30:06+24:00",
            "08:30:06.Z",
            "8:30:06Z",
        ],
    );
    check(
        "date-time",
        &[
            "1963-06-19T08:30:06.283185Z",
            "1963-06-19t08:30:06z",
            "1990-12-31T15:59:59-08:00",
        ],
        &[
            "1990-02-31T15:59:59.123-08:00",
            "1963-06-19 08:30:06Z",
            "06/19/1963 08:30:06 PST",
            "2013-350T01:01:01",
        ],
    );
}

#[test]
fn durations() {
    check(
        "duration",
        &[
            "P4DT12H30M5S",
            "P4Y",
            "PT0S",
            "P0D",
            "P1M",
            "PT1M",
            "PT36H",
            "P1DT12H",
            "P2W",
            "P1Y2M3DT4H5M6S",
        ],
        &[
            "PT1D",
            "P",
            "P1YT",
            "PT",
            "P2D1Y",
            "P1D2H",
            "P2S",
            "P1Y2W",
            "P1",
            "P\u{0662}Y",
            "P1Y2D",
        ],
    );
}

#[test]
fn emails_and_hostnames() {
    check(
        "email",
        &[
            "joe.bloggs@example.com",
            "te~st@example.com",
            "~test@example.com",
            "\"joe bloggs\"@example.com",
            "\"joe..bloggs\"@example.com",
            "\"joe@bloggs\"@example.com",
            "joe.bloggs@[127.0.0.1]",
            "joe.bloggs@[IPv6:::1]",
            "te.s.t@example.com",
        ],
        &[
            "2962",
            ".test@example.com",
            "test.@example.com",
            "te..st@example.com",
            "joe.bloggs@invalid=domain.com",
            "joe.bloggs@[127.0.0.300]",
        ],
    );
    let long_label = "a".repeat(63);
    let too_long = "a".repeat(64);
    check(
        "hostname",
        &["www.example.com", "hello", "hostname-with-hyphen", "1host", "xn--4gbwdl.xn--wgbh1c", long_label.as_str()],
        &["-a-host-name-that-starts-with--", "not_a_valid_host_name", "a-vvvvvvvvvvvvvvvveeeeeeeeeeeeeeeerrrrrrrrrrrrrrrryyyyyyyyyyyyyyyy-long-host-name-component", too_long.as_str(), "", ".", ".example", "ends-with-hyphen-", "host name"],
    );
}

#[test]
fn addresses() {
    check(
        "ipv4",
        &["192.168.0.1", "0.0.0.0", "255.255.255.255", "87.10.0.1"],
        &[
            "127.0.0.0.1",
            "256.256.256.256",
            "127.0",
            "0x7f000001",
            "087.10.0.1",
            "1.2.3.\u{0664}",
        ],
    );
    check(
        "ipv6",
        &[
            "::1",
            "::",
            "::abef",
            "1:d6::42",
            "1::d6:192.168.0.1",
            "1:2::192.168.0.1",
            "::ffff:192.168.0.1",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:77:88",
            "d6::",
            "1::",
        ],
        &[
            "12345::",
            "::abcef",
            "1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1",
            "::laptop",
            ":2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:",
            "1::2::3",
            "fe80::a%eth1",
            "1:2:3:4:5:6:7:8:9",
            " ::1",
            "::1 ",
            "1:2:3:4:1.2.3",
            "1:2:3:4:5:6:7:8:1.2.3.4",
        ],
    );
    check(
        "uuid",
        &[
            "2EB8AA08-AA98-11EA-B4AA-73B441D16380",
            "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
            "00000000-0000-0000-0000-000000000000",
        ],
        &[
            "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
            "2eb8aa08aa9811eab4aa73b441d16380",
            "2eb8-aa08-aa98-11ea-b4aa73b44-1d16380",
        ],
    );
}

#[test]
fn uris() {
    check(
        "uri",
        &[
            "http://foo.bar/?baz=qux#quux",
            "http://foo.com/blah_(wikipedia)_blah#cite-1",
            "http://foo.bar/?q=Test%20URL-encoded%20stuff",
            "http://xn--nw2a.xn--j6w193g/",
            "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
            "http://223.255.255.254",
            "ftp://ftp.is.co.za/rfc/rfc1808.txt",
            "ldap://[2001:db8::7]/c=GB?objectClass?one",
            "mailto:John.Doe@example.com",
            "news:comp.infosystems.www.servers.unix",
            "tel:+1-816-555-1212",
            "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
        ],
        &[
            "//foo.bar/?baz=qux#quux",
            "/abc",
            "\\\\WINDOWS\\fileshare",
            "abc",
            "http:// shouldfail.com",
            ":// should fail",
            "bar,baz:foo",
            "https://[@example.org/test.txt",
            "http://ex ample.com",
            "http://é.com",
        ],
    );
    check(
        "uri-reference",
        &[
            "http://foo.bar/?baz=qux#quux",
            "//foo.bar/?baz=qux#quux",
            "/abc",
            "abc",
            "#fragment",
            "",
        ],
        &["\\\\WINDOWS\\fileshare", "#frag\\ment"],
    );
}

#[test]
fn json_pointers() {
    check(
        "json-pointer",
        &["", "/foo/bar~0/baz~1/%a", "/", "/foo//bar", "/~0~1"],
        &["/foo/bar~", "#", "a", "/~2"],
    );
    check(
        "relative-json-pointer",
        &["1", "0/foo/bar", "2/0/baz/1/zip", "0#"],
        &["/foo/bar", "-1/foo", "01/a", "0##"],
    );
}

#[test]
fn unknown_formats() {
    assert!(format_dfa("idn-email").is_none());
    assert!(!is_known_format("regex"));
    assert!(is_known_format("uuid"));
}

#[test]
fn leap_seconds() {
    check(
        "time",
        &[
            "23:59:60Z",
            "23:59:60.25+00:00",
            "01:29:60+01:30",
            "15:59:60-08:00",
        ],
        &[
            "22:59:60Z",
            "23:58:60+00:00",
            "23:58:60Z",
            "23:59:60.5-00:00x",
            "23:59:61Z",
        ],
    );
    check(
        "date-time",
        &["1998-12-31T23:59:60Z"],
        &["1998-12-31T23:58:60Z", "1998-12-31T22:59:60Z"],
    );
}

#[test]
fn iris_and_templates() {
    check(
        "iri",
        &[
            "http://ƒøø.ßår/?∂éœ=πîx#πîüx",
            "http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]",
            "http://example.com/",
        ],
        &[
            "http://2001:0db8:85a3:0000:0000:8a2e:0370:7334",
            "/abc",
            "\\\\WINDOWS\\filëßåré",
            "âππ",
            "http://a b",
        ],
    );
    check(
        "iri-reference",
        &[
            "http://ƒøø.ßår/?∂éœ=πîx#πîüx",
            "//ƒøø.ßår/?∂éœ=πîx#πîüx",
            "/âππ",
            "âππ",
            "#ƒrägmênt",
        ],
        &["\\\\WINDOWS\\filëßåré", "#ƒräg\\mênt"],
    );
    check(
        "uri-template",
        &[
            "http://example.com/dictionary/{term:1}/{term}",
            "http://example.com/dictionary",
            "dictionary/{term:1}/{term}",
            "{+path,x*}/here{?q,lang}",
        ],
        &[
            "http://example.com/dictionary/{term:1}/{term",
            "{}",
            "{a:0}",
            "a}b",
        ],
    );
    assert!(format_dfa("idn-hostname").is_none());
}

/// The generated tables are the automata the patterns give today (regenerate with
/// `UPDATE_FORMAT_TABLES=1`), and a format made from its table is the one built from its
/// pattern.
#[test]
fn tables_are_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/formats/tables.rs");
    let rendered = super::render_tables();
    if std::env::var_os("UPDATE_FORMAT_TABLES").is_some() {
        std::fs::write(path, &rendered).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap();
    assert!(
        written == rendered,
        "src/formats/tables.rs is stale: run UPDATE_FORMAT_TABLES=1 cargo test -p gbnf-json-schema --lib tables_are_current"
    );
    for format in super::FORMATS {
        let from_table = format_dfa(format).unwrap().unwrap();
        let built = super::build_format_dfa(format).unwrap();
        assert_eq!(from_table.start, built.start, "{format}");
        assert_eq!(from_table.states, built.states, "{format}");
    }
}
