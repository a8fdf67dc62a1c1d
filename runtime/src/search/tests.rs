//! Search over toolsets built in the test: ranking, normalization across languages, the
//! caller's filtering, `k`, the filters, and a catalog that changes under the index.

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::testing::StubSource;
use crate::{
    Identity, SourceLifecycle, SourceStatus, SourceTool, ToolAnnotations, ToolContext, ToolFuture,
    ToolKey, ToolOutput, ToolSource, Toolset,
};

fn tool(name: &str, description: &str) -> ToolDescriptor {
    ToolDescriptor {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: json!({"type": "object", "properties": {}}),
        source: "local".to_string(),
        ..ToolDescriptor::default()
    }
}

fn toolset_of(tools: Vec<ToolDescriptor>) -> Toolset {
    let mut source = StubSource::new("local");
    for t in tools {
        source = source.stub_with(t, |_| Ok(ToolOutput::text("ok")));
    }
    Toolset::builder().source(source).build().expect("toolset")
}

fn anyone() -> Identity {
    Identity::default()
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

fn top(tools: &Toolset, query: &str) -> String {
    let hits = tools
        .search(&anyone(), query, &SearchOptions::default())
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    hits.first()
        .map(|h| h.name.clone())
        .unwrap_or_else(|| panic!("{query}: no hit"))
}

fn github_like() -> Toolset {
    let mut create = tool("issues_create", "Create an issue in a repository.");
    create.input_schema = json!({"type": "object", "properties": {
        "owner": {"type": "string", "description": "The account owner of the repository."},
        "repo": {"type": "string", "description": "The name of the repository."},
        "title": {"type": "string", "description": "The title of the issue."},
    }});
    create.source = "local".into();
    create.tags = vec!["issues".into()];
    let mut get_repo = tool("repos_get", "Get a repository.");
    get_repo.annotations.read_only_hint = Some(true);
    toolset_of(vec![
        tool("calc", "Evaluate an arithmetic expression."),
        get_repo,
        tool("pulls_create", "Create a pull request."),
        tool(
            "read_file",
            "Read a UTF-8 text file under the configured root.",
        ),
        create,
        tool(
            "issues_list",
            "List issues assigned to the authenticated user.",
        ),
        tool("current_time", "The current time in an IANA time zone."),
    ])
}

#[test]
fn a_github_issue_query_ranks_the_issue_creating_tool_first() {
    let tools = github_like();
    let hits = tools
        .search(
            &anyone(),
            "create a github issue",
            &SearchOptions::default(),
        )
        .expect("search");
    assert_eq!(hits[0].name, "issues_create", "{hits:?}");
    assert!(hits[0].matched.contains(&SearchField::Name), "{hits:?}");
    assert!(hits[0].matched.contains(&SearchField::Description));
    assert!(hits[0].score > 0.0);
    // Scores fall along the ranking, and unrelated tools are not hits at all.
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "{hits:?}"
    );
    assert!(!names(&hits).contains(&"calc"), "{hits:?}");
    assert!(!names(&hits).contains(&"current_time"), "{hits:?}");
    assert_eq!(top(&tools, "what time is it in Oslo"), "current_time");
    assert_eq!(top(&tools, "arithmetic"), "calc");
}

#[test]
fn several_query_words_in_a_description_outweigh_one_of_them_in_another_tools_name() {
    // "channel" is one tool's whole name, and the name counts three times the description;
    // but the tool whose description says what the query asks holds every word of it. Scored
    // one field at a time and added up, the name's own IDF (only one name holds "channel")
    // put `channel` first; BM25F weighs the words of one document against each other.
    let tools = toolset_of(vec![
        tool("channel", "Manage the workspace's settings."),
        tool("chat_post", "Send a message to a channel."),
        tool("inbox_read", "Read the messages in the inbox."),
        tool("email_send", "Send an email."),
        tool("users_list", "List users."),
    ]);
    let hits = tools
        .search(
            &anyone(),
            "send a message to a channel",
            &SearchOptions::default(),
        )
        .expect("search");
    assert_eq!(hits[0].name, "chat_post", "{hits:?}");
    assert_eq!(hits[0].matched, [SearchField::Description], "{hits:?}");
    assert!(names(&hits).contains(&"channel"), "{hits:?}");
    assert!(!names(&hits).contains(&"users_list"), "{hits:?}");
}

#[test]
fn names_are_found_in_every_style() {
    let tools = toolset_of(vec![
        tool("getRepoContents", "Files of a repository."),
        tool("list-dir", "Entries of a directory."),
        tool("unrelated", "Nothing to see."),
    ]);
    assert_eq!(top(&tools, "repo contents"), "getRepoContents");
    assert_eq!(top(&tools, "get_repo_contents"), "getRepoContents");
    assert_eq!(top(&tools, "list dir"), "list-dir");
    let hits = tools
        .search(&anyone(), "listDir", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["list-dir"]);
    assert_eq!(
        hits[0].matched,
        [SearchField::Name],
        "`dir` is not `directory`"
    );
}

#[test]
fn a_remote_name_is_indexed_without_its_source_prefix_and_the_source_as_its_own_field() {
    let mut remote = tool("github.issues_create", "Create an issue.");
    remote.source = "github".into();
    let mut s = StubSource::new("github");
    s = s.stub_with(remote, |_| Ok(ToolOutput::text("ok")));
    let tools = Toolset::builder().source(s).build().expect("toolset");
    let hits = tools
        .search(&anyone(), "github", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["github.issues_create"]);
    assert_eq!(hits[0].exported_name, "github__issues_create");
    assert_eq!(hits[0].matched, [SearchField::Source]);
}

#[test]
fn accents_fold_both_ways() {
    let tools = toolset_of(vec![
        tool(
            "contact_lookup",
            "Find a contact such as Müller by last name.",
        ),
        tool("other", "Something else."),
    ]);
    assert_eq!(top(&tools, "muller"), "contact_lookup");
    assert_eq!(top(&tools, "MÜLLER"), "contact_lookup");
    let plain = toolset_of(vec![tool("cafe_menu", "The menu of the cafe.")]);
    assert_eq!(top(&plain, "Café"), "cafe_menu");
}

#[test]
fn a_chinese_query_finds_a_chinese_description() {
    let tools = toolset_of(vec![
        tool("read_file", "读取一个文本文件的内容。"),
        tool("send_mail", "发送一封电子邮件给收件人。"),
        tool("calc", "计算一个算术表达式。"),
    ]);
    assert_eq!(top(&tools, "读取文件"), "read_file");
    assert_eq!(top(&tools, "发送邮件"), "send_mail");
    let hits = tools
        .search(&anyone(), "算术", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["calc"]);
}

#[test]
fn a_japanese_query_finds_a_japanese_description() {
    let tools = toolset_of(vec![
        tool("read_file", "テキストファイルを読み込みます。"),
        tool("weather", "指定した都市の天気予報を取得します。"),
        tool("translate", "文章を英語に翻訳します。"),
    ]);
    assert_eq!(top(&tools, "ファイルを読む"), "read_file");
    assert_eq!(top(&tools, "東京の天気"), "weather");
    assert_eq!(top(&tools, "翻訳"), "translate");
}

#[test]
fn a_german_query_with_umlauts_finds_german_descriptions() {
    let tools = toolset_of(vec![
        tool("delete_file", "Löscht eine Datei im Arbeitsverzeichnis."),
        tool(
            "weather",
            "Gibt die Wettervorhersage für eine Stadt zurück.",
        ),
        tool("street_lookup", "Sucht eine Straße in einer Stadt."),
    ]);
    assert_eq!(top(&tools, "Datei löschen"), "delete_file");
    assert_eq!(top(&tools, "loscht datei"), "delete_file");
    assert_eq!(top(&tools, "Wettervorhersage für München"), "weather");
    assert_eq!(top(&tools, "strasse"), "street_lookup");
}

#[test]
fn an_empty_or_stop_word_query_is_invalid_arguments() {
    let tools = github_like();
    for query in ["", "   ", "the of a", "!!! ???", "and, or; but"] {
        let e = tools
            .search(&anyone(), query, &SearchOptions::default())
            .expect_err(query);
        assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{query:?}: {e}");
        assert!(e.message().contains("search query"), "{query:?}: {e}");
    }
    let long = "issue ".repeat(MAX_QUERY_CHARS);
    let e = tools
        .search(&anyone(), &long, &SearchOptions::default())
        .expect_err("too long");
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let e = tools
        .search(&anyone(), "issue", &SearchOptions::new().k(0))
        .expect_err("k = 0");
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    // A query with terms that match nothing is an empty success.
    let hits = tools
        .search(&anyone(), "zebra", &SearchOptions::default())
        .expect("search");
    assert!(hits.is_empty(), "{hits:?}");
}

#[test]
fn a_tool_the_caller_may_not_call_is_never_found() {
    let mut secret = tool("issues_delete", "Delete an issue for good.");
    secret.requires_auth = true;
    let tools = toolset_of(vec![secret, tool("issues_get", "Get an issue.")]);
    let anonymous = anyone();
    let hits = tools
        .search(&anonymous, "delete issue", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["issues_get"], "the listing's check hides it");
    let listed: Vec<String> = tools
        .tools_for(&anonymous)
        .iter()
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(listed, ["issues_get"]);
    let someone = Identity {
        caller: Some("ada".into()),
        ..Identity::default()
    };
    let hits = tools
        .search(&someone, "delete issue", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["issues_delete", "issues_get"]);
}

#[test]
fn a_policy_rule_that_keeps_a_tool_for_a_role_hides_it_from_other_callers() {
    let policy: toolgate_model::config::PolicyConfig = serde_json::from_value(json!({
        "rules": [{"tools": ["issues_create"], "roles": ["admin"]}]
    }))
    .expect("policy");
    let mut source = StubSource::new("local");
    for t in [
        tool("issues_create", "Create an issue."),
        tool("issues_list", "List issues."),
    ] {
        source = source.stub_with(t, |_| Ok(ToolOutput::text("ok")));
    }
    let tools = Toolset::builder()
        .source(source)
        .policy(&policy)
        .build()
        .expect("toolset");
    let hits = tools
        .search(&anyone(), "issues", &SearchOptions::default())
        .expect("search");
    assert_eq!(names(&hits), ["issues_list"]);
    let admin = Identity {
        roles: vec!["admin".into()],
        ..Identity::default()
    };
    let hits = tools
        .search(&admin, "create issue", &SearchOptions::default())
        .expect("search");
    assert_eq!(hits[0].name, "issues_create");
}

#[test]
fn k_and_the_filters_are_respected() {
    let many: Vec<ToolDescriptor> = (0..30)
        .map(|i| tool(&format!("issue_tool_{i}"), "Works on an issue."))
        .collect();
    let tools = toolset_of(many);
    for k in [1, 5, 10, 30] {
        let hits = tools
            .search(&anyone(), "issue", &SearchOptions::new().k(k))
            .expect("search");
        assert_eq!(hits.len(), k);
    }
    let hits = tools
        .search(&anyone(), "issue", &SearchOptions::new().k(100))
        .expect("search");
    assert_eq!(hits.len(), 30);
    // Equal scores keep the catalog's order: the same query gives the same hits every time.
    assert_eq!(hits[0].name, "issue_tool_0");

    let tools = github_like();
    let read_only = tools
        .search(
            &anyone(),
            "repository",
            &SearchOptions::new().read_only(true),
        )
        .expect("search");
    assert_eq!(names(&read_only), ["repos_get"]);
    let tagged = tools
        .search(&anyone(), "repository", &SearchOptions::new().tag("issues"))
        .expect("search");
    assert_eq!(names(&tagged), ["issues_create"]);
    let elsewhere = tools
        .search(
            &anyone(),
            "repository",
            &SearchOptions::new().source("github"),
        )
        .expect("search");
    assert!(elsewhere.is_empty());
}

#[test]
fn titles_tags_categories_and_arguments_are_indexed() {
    let mut t = tool("x1", "Does a thing.");
    t.annotations = ToolAnnotations {
        title: Some("Weather forecast".into()),
        ..ToolAnnotations::default()
    };
    t.category = Some("meteorology".into());
    t.tags = vec!["climate".into()];
    t.input_schema = json!({"type": "object", "properties": {
        "latitude": {"type": "number", "description": "Degrees north of the equator."}
    }});
    let tools = toolset_of(vec![t, tool("x2", "Does another thing.")]);
    for (query, field) in [
        ("forecast", SearchField::Title),
        ("meteorology", SearchField::Category),
        ("climate", SearchField::Tags),
        ("latitude", SearchField::Arguments),
        ("equator", SearchField::Arguments),
    ] {
        let hits = tools
            .search(&anyone(), query, &SearchOptions::default())
            .expect("search");
        assert_eq!(names(&hits), ["x1"], "{query}");
        assert_eq!(hits[0].matched, [field], "{query}");
    }
}

/// A source whose tools change at run time, bumping its change counter as a remote one does.
struct Changing {
    tools: Mutex<Vec<Arc<ToolDescriptor>>>,
    changes: tokio::sync::watch::Sender<u64>,
}

impl Changing {
    fn set(&self, tools: Vec<ToolDescriptor>) {
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) =
            tools.into_iter().map(Arc::new).collect();
        self.changes.send_modify(|n| *n += 1);
    }
}

impl ToolSource for Changing {
    fn id(&self) -> &str {
        "local"
    }
    fn tools(&self) -> Vec<SourceTool> {
        self.tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|d| SourceTool {
                descriptor: Arc::clone(d),
                key: ToolKey::Name(d.name.as_str().into()),
            })
            .collect()
    }
    fn call(
        self: Arc<Self>,
        _: &SourceTool,
        _: serde_json::Value,
        _: ToolContext,
    ) -> ToolFuture<'static> {
        ToolFuture::ready(Ok(ToolOutput::text("ok")))
    }
    fn lifecycle(&self) -> Option<&dyn SourceLifecycle> {
        Some(self)
    }
}

impl SourceLifecycle for Changing {
    fn status(&self) -> SourceStatus {
        SourceStatus::ready("local", "local", 0)
    }
    fn tool_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.changes.subscribe())
    }
}

#[test]
fn after_the_catalog_changes_new_tools_are_found_and_removed_ones_are_gone() {
    let source = Arc::new(Changing {
        tools: Mutex::new(Vec::new()),
        changes: tokio::sync::watch::channel(0).0,
    });
    source.set(vec![
        tool("weather_get", "Get the weather forecast."),
        tool("calc", "Evaluate an arithmetic expression."),
    ]);
    let tools = Toolset::builder()
        .source_arc(Arc::clone(&source) as Arc<dyn ToolSource>)
        .build()
        .expect("toolset");
    assert_eq!(top(&tools, "weather"), "weather_get");
    let before = tools.catalog();
    let calc_entry = Arc::clone(before.get("calc").expect("calc"));

    source.set(vec![
        tool("calc", "Evaluate an arithmetic expression."),
        tool("translate", "Translate text into another language."),
    ]);
    let hits = tools
        .search(&anyone(), "weather", &SearchOptions::default())
        .expect("search");
    assert!(hits.is_empty(), "a removed tool is gone: {hits:?}");
    assert_eq!(
        top(&tools, "translate text"),
        "translate",
        "a new tool is found"
    );
    assert_eq!(top(&tools, "arithmetic"), "calc");
    let after = tools.catalog();
    assert!(after.generation() > before.generation());
    assert!(
        Arc::ptr_eq(&calc_entry, after.get("calc").expect("calc")),
        "a tool listed the same way keeps its entry, and its indexed fields with it"
    );
}

#[test]
fn the_filters_find_their_k_hits_however_far_down_the_ranking_they_are() {
    // Forty tools match; the longer a description, the lower its score. Only the two lowest
    // carry the tag asked for, so the search must look past the best-scored tools.
    let tools: Vec<ToolDescriptor> = (0..40)
        .map(|i| {
            let filler = "word ".repeat(i);
            let mut t = tool(&format!("tool_{i}"), &format!("alpha {filler}"));
            if i >= 38 {
                t.tags = vec!["wanted".into()];
            }
            t
        })
        .collect();
    let tools = toolset_of(tools);
    let all = tools
        .search(&anyone(), "alpha", &SearchOptions::new().k(40))
        .expect("search");
    assert_eq!(all.len(), 40);
    assert_eq!(all[0].name, "tool_0", "the shortest description first");
    assert_eq!(all[39].name, "tool_39");
    let hits = tools
        .search(&anyone(), "alpha", &SearchOptions::new().k(2).tag("wanted"))
        .expect("search");
    assert_eq!(names(&hits), ["tool_38", "tool_39"]);
    let one = tools
        .search(&anyone(), "alpha", &SearchOptions::new().k(1).tag("wanted"))
        .expect("search");
    assert_eq!(names(&one), ["tool_38"]);
}
