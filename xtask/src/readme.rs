//! `cargo xtask readme`: the README's JSON Schema Test Suite figures are written from
//! `tests/data/jsts/baseline.tsv`, which the test suite guards, so that the published pass
//! rates are never stale. `tidy` reports a README that disagrees with the baseline.

use std::collections::BTreeMap;
use std::path::Path;

/// The README's generated regions: (name, text between its markers).
const REGIONS: [&str; 2] = ["jsts-total", "jsts-table"];

/// One baseline row's counts.
#[derive(Clone, Copy, Default)]
struct Counts {
    groups: u64,
    compiled: u64,
    checked: u64,
    correct: u64,
}

/// The README with its generated regions rewritten from `baseline` (the TSV text), or an
/// error naming what is malformed.
pub fn render(readme: &str, baseline: &str) -> Result<String, String> {
    let (files, total) = parse(baseline)?;
    let mut out = readme.to_owned();
    for region in REGIONS {
        let body = match region {
            "jsts-total" => format!(
                "{}/{} groups compile; {}/{} verdicts right ({:.1}%)",
                thousands(total.compiled),
                thousands(total.groups),
                thousands(total.correct),
                thousands(total.checked),
                100.0 * total.correct as f64 / total.checked.max(1) as f64
            ),
            _ => table(&files),
        };
        out = replace_region(&out, region, &body)?;
    }
    Ok(out)
}

/// The problems `tidy` reports: the README is not what [`render`] makes of it.
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let (readme_path, baseline_path) = (
        root.join("README.md"),
        root.join("tests/data/jsts/baseline.tsv"),
    );
    // A tree without them (a test's scratch directory) has nothing to check.
    if !readme_path.exists() || !baseline_path.exists() {
        return Ok(Vec::new());
    }
    let readme = std::fs::read_to_string(readme_path)?;
    let baseline = std::fs::read_to_string(baseline_path)?;
    Ok(match render(&readme, &baseline) {
        Ok(rendered) if rendered == readme => Vec::new(),
        Ok(_) => vec![
            "README.md: the JSON Schema Test Suite figures differ from tests/data/jsts/baseline.tsv; run `cargo xtask readme`".to_owned(),
        ],
        Err(message) => vec![format!("README.md: {message}")],
    })
}

type Files = BTreeMap<String, BTreeMap<String, Counts>>;

fn parse(baseline: &str) -> Result<(Files, Counts), String> {
    let mut files: Files = BTreeMap::new();
    let mut total = Counts::default();
    for (index, line) in baseline.lines().enumerate() {
        if line.starts_with('#') || line.starts_with("draft\t") || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let number = |i: usize| -> Result<u64, String> {
            fields
                .get(i)
                .and_then(|field| field.parse().ok())
                .ok_or_else(|| {
                    format!(
                        "baseline.tsv:{}: expected a count in column {}",
                        index + 1,
                        i + 1
                    )
                })
        };
        let counts = Counts {
            groups: number(2)?,
            compiled: number(3)?,
            checked: number(5)?,
            correct: number(6)?,
        };
        total.groups += counts.groups;
        total.compiled += counts.compiled;
        total.checked += counts.checked;
        total.correct += counts.correct;
        files
            .entry(fields[1].to_owned())
            .or_default()
            .insert(fields[0].to_owned(), counts);
    }
    Ok((files, total))
}

fn table(files: &Files) -> String {
    let mut out = String::from("| file | draft 2020-12 | draft 7 |\n| --- | --- | --- |\n");
    // Core keyword files first, then `optional/…`, each alphabetically.
    let mut names: Vec<&String> = files.keys().collect();
    names.sort_by_key(|name| (name.starts_with("optional/"), name.to_lowercase()));
    for name in names {
        let cell = |draft: &str| match files[name].get(draft) {
            Some(c) => format!("{}/{} · {}/{}", c.compiled, c.groups, c.correct, c.checked),
            None => "–".to_owned(),
        };
        out.push_str(&format!(
            "| {name} | {} | {} |\n",
            cell("draft2020-12"),
            cell("draft7")
        ));
    }
    out
}

fn replace_region(text: &str, region: &str, body: &str) -> Result<String, String> {
    let begin = format!("<!-- {region}:begin -->");
    let end = format!("<!-- {region}:end -->");
    let start = text
        .find(&begin)
        .ok_or_else(|| format!("no `{begin}` marker"))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .map(|offset| start + offset)
        .ok_or_else(|| format!("no `{end}` marker after `{begin}`"))?;
    // A table region starts and ends on its own lines; an inline region stays inline.
    let body = if text[..start].ends_with('\n') || body.contains('\n') {
        format!("\n{}", body.trim_end_matches('\n')) + "\n"
    } else {
        body.to_owned()
    };
    Ok(format!("{}{}{}", &text[..start], body, &text[stop..]))
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASELINE: &str =
        "# comment\ndraft\tfile\tgroups\tgroups_compiled\ttests\tchecked\tcorrect\twrong\n\
        draft2020-12\tconst\t2\t2\t5\t5\t5\t0\n\
        draft7\tconst\t2\t1\t5\t3\t2\t1\n\
        draft2020-12\toptional/bignum\t1\t1\t2\t2\t1\t1\n\
        draft7\tallOf\t3\t3\t9\t9\t9\t0\n";

    #[test]
    fn renders_the_regions() {
        let readme = "Total: <!-- jsts-total:begin -->old<!-- jsts-total:end -->.\n\n<!-- jsts-table:begin -->\nold\n<!-- jsts-table:end -->\n";
        let rendered = render(readme, BASELINE).expect("renders");
        assert_eq!(
            rendered,
            "Total: <!-- jsts-total:begin -->7/8 groups compile; 17/19 verdicts right (89.5%)<!-- jsts-total:end -->.\n\n\
             <!-- jsts-table:begin -->\n| file | draft 2020-12 | draft 7 |\n| --- | --- | --- |\n\
             | allOf | – | 3/3 · 9/9 |\n| const | 2/2 · 5/5 | 1/2 · 2/3 |\n| optional/bignum | 1/1 · 1/2 | – |\n\
             <!-- jsts-table:end -->\n"
        );
        assert_eq!(render(&rendered, BASELINE).expect("renders"), rendered);
        assert!(render("no markers", BASELINE).is_err());
    }

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(3072), "3,072");
        assert_eq!(thousands(749), "749");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
