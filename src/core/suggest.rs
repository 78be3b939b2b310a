//! The known name nearest to a misspelt one, for "did you mean" in messages.

/// The Levenshtein distance between `a` and `b`, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row.first().copied().unwrap_or(0);
        let mut next = Vec::with_capacity(row.len());
        next.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev + usize::from(ca != *cb);
            let above = row.get(j + 1).copied().unwrap_or(usize::MAX - 1) + 1;
            let left = next.last().copied().unwrap_or(usize::MAX - 1) + 1;
            prev = row.get(j + 1).copied().unwrap_or(0);
            next.push(substitute.min(above).min(left));
        }
        row = next;
    }
    row.last().copied().unwrap_or(0)
}

/// The name of `known` nearest to `name` (the first of those equally near), or `None` when `known` is empty.
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known.into_iter().min_by_key(|k| edit_distance(name, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "abc"), 0);
    }

    #[test]
    fn the_nearest_name_wins_and_ties_go_to_the_first() {
        assert_eq!(nearest("SNOWID_WORKERID", ["SNOWID_EPOCH", "SNOWID_WORKER_ID"]), Some("SNOWID_WORKER_ID"));
        assert_eq!(nearest("ab", ["ax", "ay"]), Some("ax"));
        assert_eq!(nearest("ab", []), None);
    }
}
