//! "Did you mean": the closest of some candidate names to a misspelt one, by edit distance.
//!
//! One implementation for every suggestion Nabla makes: misspelt keywords (the parser), and
//! unknown variables, functions, built-ins and shape variables (`hir`). The rule follows rustc's
//! `find_best_match_for_name`: a candidate that differs only in case wins outright; otherwise the
//! nearest candidate within a third of the name's length (at least one edit) wins, where swapping
//! two neighbouring characters counts as one edit (`fucntion`, `flaot`).

/// The optimal-string-alignment distance between `a` and `b`: insertions, deletions,
/// substitutions and transpositions of adjacent characters, each costing one. Gives up (returns
/// `None`) as soon as the distance must exceed `limit`.
pub fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    // The lengths alone rule out most candidates, before anything is allocated.
    if a.chars().count().abs_diff(b.chars().count()) > limit {
        return None;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the dynamic-programming table: two back, one back, current.
    let width = b.len() + 1;
    let mut before: Vec<usize> = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    let mut current: Vec<usize> = vec![0; width];
    for i in 1..=a.len() {
        current[0] = i;
        let mut row_min = current[0];
        for j in 1..width {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
            row_min = row_min.min(best);
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b.len()]).filter(|&d| d <= limit)
}

/// How many edits a name of this length may be from a suggestion: a third of its length, at
/// least one, but fewer than its length (so that `y` is not taken for `x`).
pub fn max_distance(name: &str) -> usize {
    let len = name.chars().count();
    (len / 3).max(1).min(len.saturating_sub(1))
}

/// The candidate `name` most likely stands for, if any is close enough. Ties go to the first
/// candidate, so callers list the likelier kinds of name first. The name itself is never
/// suggested.
pub fn best_match<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = max_distance(name);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name || candidate.is_empty() {
            continue;
        }
        if candidate.eq_ignore_ascii_case(name) {
            return Some(candidate);
        }
        let limit = best.map_or(limit, |(d, _)| d.saturating_sub(1));
        if let Some(d) = distance(name, candidate, limit)
            && best.is_none_or(|(best_d, _)| d < best_d)
        {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("fucntion", "function", 3), Some(1));
        assert_eq!(distance("flaot", "float", 3), Some(1));
        assert_eq!(distance("lop", "loop", 3), Some(1));
        assert_eq!(distance("Tensr", "Tensor", 3), Some(1));
        assert_eq!(distance("retrun", "return", 3), Some(1));
        assert_eq!(distance("kitten", "sitting", 3), Some(3));
        assert_eq!(distance("kitten", "sitting", 2), None);
        assert_eq!(distance("", "abc", 3), Some(3));
        assert_eq!(distance("abc", "abc", 0), Some(0));
    }

    #[test]
    fn best_matches() {
        let keywords = ["function", "float", "for", "loop", "return"];
        assert_eq!(best_match("fucntion", keywords), Some("function"));
        assert_eq!(best_match("Function", keywords), Some("function"));
        assert_eq!(best_match("lop", keywords), Some("loop"));
        assert_eq!(best_match("x", keywords), None);
        assert_eq!(best_match("y", ["x", "z"]), None);
        assert_eq!(best_match("X", ["x", "z"]), Some("x"));
        assert_eq!(best_match("fi", ["if"]), Some("if"));
        assert_eq!(best_match("loop", keywords), None);
        assert_eq!(best_match("sigmod", ["sin", "sigmoid", "sum"]), Some("sigmoid"));
        // The nearer wins over the earlier.
        assert_eq!(best_match("mena", ["min", "mean"]), Some("mean"));
        assert_eq!(best_match("abcdef", ["uvwxyz"]), None);
    }
}
