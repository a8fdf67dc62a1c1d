//! Names of the generated `Tool` enum's variants.

use std::collections::BTreeSet;

use super::ToolInfo;

/// UpperCamelCase variants, unique, never `Self`.
pub(super) fn assign_variants(tools: &mut [ToolInfo]) {
    let mut used: BTreeSet<String> = BTreeSet::new();
    for t in tools {
        let mut base: String = t
            .name
            .split(['_', '-'])
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut cs = p.chars();
                cs.next()
                    .map_or_else(String::new, |f| f.to_uppercase().chain(cs).collect())
            })
            .collect();
        base.retain(|ch| ch.is_ascii_alphanumeric());
        if base.is_empty() || base.starts_with(|ch: char| ch.is_ascii_digit()) || base == "Self" {
            base = format!("T{base}");
        }
        let mut v = base.clone();
        let mut n = 2;
        while used.contains(&v) {
            v = format!("{base}{n}");
            n += 1;
        }
        used.insert(v.clone());
        t.variant = v;
    }
}
