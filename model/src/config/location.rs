//! Where each node of a YAML document is: a map from JSON pointer (`/tools/local/3/fn`) to line
//! and column, built from the parser's marked events. Semantic checks (in this crate and in the
//! code generator) use it to point at the line of tools.yaml that is wrong.

use std::collections::HashMap;
use std::fmt;

use serde_saphyr::granit_parser::{Event, Parser, Span};

/// A position in a text file: 1-based line and 1-based column, counted in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Line, starting at 1.
    pub line: usize,
    /// Column, starting at 1, in characters (not bytes).
    pub column: usize,
}

impl Location {
    /// The start of a file (1:1), used when nothing better is known.
    pub const START: Location = Location { line: 1, column: 1 };

    /// A location from 1-based line and column.
    pub const fn new(line: usize, column: usize) -> Self {
        Self { line, column }
    }

    fn from_span(span: &Span) -> Self {
        Self {
            line: span.start.line(),
            column: span.start.col() + 1,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Where one node is: the node itself and, for a value in a mapping, its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NodeLocation {
    value: Location,
    key: Option<Location>,
}

/// Positions of the nodes of the first document of a YAML text, by JSON pointer (RFC 6901:
/// `""` is the root, `/tools/local/0/fn` the `fn` value of the first `tools.local` entry; `~` and
/// `/` in keys are escaped as `~0` and `~1`).
///
/// Built from the parser's events, so it never fails: on a syntax error it holds what came
/// before the error (deserialization reports the error itself, with its location).
#[derive(Debug, Clone, Default)]
pub struct LocationMap {
    nodes: HashMap<String, NodeLocation>,
}

enum Frame {
    Seq {
        pointer: String,
        next: usize,
    },
    Map {
        pointer: String,
        key: Option<(String, Location)>,
    },
}

impl LocationMap {
    /// Parses `src` and records where every node of its first document is.
    pub fn from_yaml(src: &str) -> Self {
        let mut nodes = HashMap::new();
        let mut stack: Vec<Frame> = Vec::new();
        // Nesting depth inside a complex (non-scalar) mapping key, whose subtree is skipped.
        let mut skip_depth = 0usize;
        for item in Parser::new_from_str(src) {
            let Ok((event, span)) = item else { break };
            let loc = Location::from_span(&span);
            let (is_node, opens) = match &event {
                Event::Scalar(..) | Event::Alias(..) => (true, false),
                Event::SequenceStart(..) | Event::MappingStart(..) => (true, true),
                Event::SequenceEnd | Event::MappingEnd => {
                    if skip_depth > 0 {
                        skip_depth -= 1;
                    } else {
                        stack.pop();
                    }
                    continue;
                }
                Event::DocumentEnd => break,
                _ => continue,
            };
            if !is_node {
                continue;
            }
            if skip_depth > 0 {
                skip_depth += usize::from(opens);
                continue;
            }
            let pointer = match stack.last_mut() {
                None => String::new(),
                Some(Frame::Seq { pointer, next }) => {
                    let p = format!("{pointer}/{next}");
                    *next += 1;
                    nodes.insert(
                        p.clone(),
                        NodeLocation {
                            value: loc,
                            key: None,
                        },
                    );
                    p
                }
                Some(Frame::Map { pointer, key }) => match key.take() {
                    None => {
                        // This node is a key.
                        if let Event::Scalar(text, ..) = &event {
                            *key = Some((text.to_string(), loc));
                        } else {
                            // A complex key: skip it and record its value under `?`.
                            *key = Some(("?".to_string(), loc));
                            skip_depth += usize::from(opens);
                        }
                        continue;
                    }
                    Some((k, key_loc)) => {
                        let p = format!("{pointer}/{}", escape(&k));
                        nodes.insert(
                            p.clone(),
                            NodeLocation {
                                value: loc,
                                key: Some(key_loc),
                            },
                        );
                        p
                    }
                },
            };
            if pointer.is_empty() {
                nodes.insert(
                    String::new(),
                    NodeLocation {
                        value: loc,
                        key: None,
                    },
                );
            }
            if opens {
                stack.push(match event {
                    Event::SequenceStart(..) => Frame::Seq { pointer, next: 0 },
                    _ => Frame::Map { pointer, key: None },
                });
            }
        }
        Self { nodes }
    }

    /// Where the node at `pointer` starts, if the document has it.
    pub fn value(&self, pointer: &str) -> Option<Location> {
        self.nodes.get(pointer).map(|n| n.value)
    }

    /// Where the key of the mapping entry at `pointer` is, if `pointer` is a mapping entry.
    pub fn key(&self, pointer: &str) -> Option<Location> {
        self.nodes.get(pointer).and_then(|n| n.key)
    }

    /// The best location for a message about `pointer`: the node's own value, else (for a
    /// pointer the document does not have, e.g. a missing key) its nearest ancestor that exists,
    /// else the start of the file.
    pub fn locate(&self, pointer: &str) -> Location {
        let mut p = pointer;
        loop {
            if let Some(loc) = self.value(p) {
                return loc;
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return Location::START,
            }
        }
    }

    /// How many nodes were recorded.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node was recorded (an empty or unparsable document).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Escapes one JSON-pointer reference token (RFC 6901): `~` → `~0`, `/` → `~1`.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
version: 1
tools:
  local:
    - fn: crate::a::b
      name: first
    - discover: true
  mcp:
    - {id: x, stdio: {command: node}}
settings:
  a/b: [1, 2]
";

    #[test]
    fn maps_pointers_to_lines_and_columns() {
        let m = LocationMap::from_yaml(DOC);
        assert_eq!(m.value(""), Some(Location::new(1, 1)));
        assert_eq!(m.value("/version"), Some(Location::new(1, 10)));
        assert_eq!(m.key("/version"), Some(Location::new(1, 1)));
        assert_eq!(m.value("/tools/local/0"), Some(Location::new(4, 7)));
        assert_eq!(m.value("/tools/local/0/fn"), Some(Location::new(4, 11)));
        assert_eq!(m.key("/tools/local/0/name"), Some(Location::new(5, 7)));
        assert_eq!(
            m.value("/tools/local/1/discover"),
            Some(Location::new(6, 17))
        );
        assert_eq!(m.value("/tools/mcp/0/id"), Some(Location::new(8, 12)));
        assert_eq!(
            m.value("/tools/mcp/0/stdio/command"),
            Some(Location::new(8, 32))
        );
        assert_eq!(m.value("/settings/a~1b/1"), Some(Location::new(10, 12)));
    }

    #[test]
    fn locate_falls_back_to_ancestors() {
        let m = LocationMap::from_yaml(DOC);
        assert_eq!(m.locate("/tools/local/0/timeout_ms"), Location::new(4, 7));
        assert_eq!(m.locate("/nope/deeper"), Location::new(1, 1));
        assert_eq!(LocationMap::from_yaml("").locate("/x"), Location::START);
    }

    #[test]
    fn survives_syntax_errors_and_complex_keys() {
        let m = LocationMap::from_yaml("a: 1\nb: [\n");
        assert_eq!(m.value("/a"), Some(Location::new(1, 4)));
        let m = LocationMap::from_yaml("? [x, y]\n: {k: v}\nz: 2\n");
        assert_eq!(m.value("/z"), Some(Location::new(3, 4)));
    }
}
