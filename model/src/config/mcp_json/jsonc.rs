//! JSONC (JSON with comments and trailing commas, as VS Code writes it) to JSON.

/// JSONC to JSON, keeping every line and column: comments and trailing commas become spaces, a
/// byte-order mark goes.
pub(super) fn strip_jsonc(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_string, mut comma) = (false, None::<usize>);
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            }
            in_string = c != '"';
            continue;
        }
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                out.push(' ');
                while let Some(&c) = chars.peek().filter(|c| **c != '\n') {
                    out.push(if c == '\r' { c } else { ' ' });
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                chars.next();
                out.push_str("  ");
                let mut prev = ' ';
                for c in chars.by_ref() {
                    out.push(if c == '\n' || c == '\r' { c } else { ' ' });
                    if std::mem::replace(&mut prev, c) == '*' && c == '/' {
                        break;
                    }
                }
            }
            (']' | '}', _) => {
                if let Some(i) = comma.take() {
                    out.replace_range(i..=i, " ");
                }
                out.push(c);
            }
            _ => {
                if !c.is_whitespace() {
                    comma = (c == ',').then_some(out.len());
                }
                in_string = c == '"';
                out.push(c);
            }
        }
    }
    out
}
