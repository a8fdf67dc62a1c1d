//! The catalog on its own: names in both forms, the first source keeping a name, entries kept
//! across rebuilds while their tool is listed the same way.

use std::sync::Arc;

use super::*;
use crate::testing::StubSource;
use crate::{ToolDescriptor, ToolOutput};

fn stub(id: &str, tools: &[&str]) -> Arc<dyn ToolSource> {
    let mut s = StubSource::new(id);
    for t in tools {
        s = s.stub(t, |_| Ok(ToolOutput::text("ok")));
    }
    Arc::new(s)
}

#[test]
fn every_entry_answers_to_its_name_and_its_exported_name() {
    let sources = [stub("local", &["read_file"]), stub("gh", &["gh.get_repo"])];
    let c = Catalog::build(&sources, None, Vec::new(), &Default::default());
    assert_eq!(c.len(), 2);
    assert_eq!(c.get("read_file").unwrap().name(), "read_file");
    assert_eq!(c.get("gh.get_repo").unwrap().name(), "gh.get_repo");
    assert_eq!(c.get("gh__get_repo").unwrap().name(), "gh.get_repo");
    assert_eq!(
        c.get("gh__get_repo").unwrap().exported_name(),
        "gh__get_repo"
    );
    assert!(c.get("gh.missing").is_none());
    assert!(c.get("").is_none());
    assert!(!c.contains("get_repo"), "a part of a name is not a name");
}

#[test]
fn the_first_source_that_offers_a_name_keeps_it() {
    let sources = [
        stub("overlay", &["fetch"]),
        stub("local", &["fetch", "calc"]),
    ];
    let c = Catalog::build(&sources, None, Vec::new(), &Default::default());
    let names: Vec<_> = c.entries().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["fetch", "calc"]);
    assert_eq!(c.get("fetch").unwrap().source().id(), "overlay");
}

#[test]
fn a_rebuild_keeps_the_entries_of_tools_listed_the_same_way() {
    let sources = [stub("local", &["a", "b"])];
    let first = Catalog::build(&sources, None, Vec::new(), &Default::default());
    let a = Arc::clone(first.get("a").unwrap());
    let again = Catalog::build(&sources, Some(&first), Vec::new(), &Default::default());
    assert!(
        Arc::ptr_eq(&a, again.get("a").unwrap()),
        "same tool, same entry"
    );
    assert_eq!(again.generation(), first.generation() + 1);

    // Another source with a tool of the same name and schema is another entry.
    let other = [stub("other", &["a"])];
    let moved = Catalog::build(&other, Some(&again), Vec::new(), &Default::default());
    assert!(!Arc::ptr_eq(&a, moved.get("a").unwrap()));
}

#[test]
fn exports_are_computed_once_and_shared() {
    let sources = [stub("local", &["a"])];
    let c = Catalog::build(&sources, None, Vec::new(), &Default::default());
    let e = c.get("a").unwrap();
    let one = e.export(Dialect::Mcp).unwrap();
    let two = e.export(Dialect::Mcp).unwrap();
    assert!(Arc::ptr_eq(&one, &two));
    assert_eq!(one["name"], "a");
}

#[test]
fn a_big_catalog_finds_every_name() {
    let names: Vec<String> = (0..5000).map(|i| format!("tool_{i}")).collect();
    let mut s = StubSource::new("local");
    for n in &names {
        s = s.stub(n, |_| Ok(ToolOutput::text("ok")));
    }
    let c = Catalog::build(
        &[Arc::new(s) as Arc<dyn ToolSource>],
        None,
        Vec::new(),
        &Default::default(),
    );
    for (i, n) in names.iter().enumerate() {
        assert!(Arc::ptr_eq(c.get(n).unwrap(), &c.entries()[i]), "{n}");
    }
    assert!(c.get("tool_5000").is_none());
    let d: &ToolDescriptor = c.entries()[42].descriptor();
    assert_eq!(d.name, "tool_42");
}

use toolgate_model::dialect::Dialect;
