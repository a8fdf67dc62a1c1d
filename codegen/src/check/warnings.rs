//! Problems worth a warning that do not fail the build.

use toolgate_model::Diagnostic;

use super::{Crate, Resolved};

/// Unused state types, private or undescribed tool functions, policies for tools that do not exist.
pub(super) fn warn(c: &Crate<'_>, r: &mut Resolved) {
    for (i, s) in r.states.iter().enumerate() {
        if s.tools.is_empty() {
            r.warnings.push(c.config.warning_at(
                &format!("/state/{i}"),
                format!(
                    "no compiled tool takes `State<{}>`; the toolset still requires it",
                    s.last
                ),
            ));
        }
    }
    for t in &r.tools {
        if t.module != "crate"
            && !c
                .scan
                .tools
                .iter()
                .any(|f| f.path == t.function && f.is_pub)
        {
            r.warnings.push(
                c.config
                    .warning_at(&t.entry_pointer(), format!("tool function `{}` is private", t.function))
                    .with_hint("the generated toolset calls it from another module: make it `pub(crate)` or `pub`"),
            );
        }
    }
    for t in &r.tools {
        let described = t.listed.as_ref().is_some_and(|l| l.description.is_some())
            || c.scan
                .tools
                .iter()
                .any(|f| f.path == t.function && f.has_description);
        if !described {
            r.warnings.push(
                c.config
                    .warning_at(&t.entry_pointer(), format!("tool `{}` has no description", t.name))
                    .with_hint(format!(
                        "models choose tools by their description: add a doc comment to `{}` (or `description:` here)",
                        t.function
                    )),
            );
        }
    }
    for name in c.config.policy.tools.keys() {
        if !name.contains('.') && !r.tools.iter().any(|t| &t.name == name) {
            let pointer = format!(
                "/policy/tools/{}",
                toolgate_model::config::location::escape(name)
            );
            let loc = c
                .config
                .locations
                .key(&pointer)
                .unwrap_or_else(|| c.config.locate(&pointer));
            r.warnings.push(Diagnostic::warning(
                &c.config.path,
                Some(loc),
                format!("policy for `{name}`, which is not a tool of this toolset"),
            ));
        }
    }
}
