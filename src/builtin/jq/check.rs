//! Static checks of a filter and conversion of jaq's load and compile errors.

use jaq_core::{
    compile,
    load::{self, lex::StrPart, parse::Pattern, parse::Term},
    path::Part,
};

use super::JqError;

/// A jaq error at `part`, a slice of `code`.
fn at(code: &str, part: &str, message: String) -> JqError {
    let offset = if code.as_ptr() <= part.as_ptr() && part.len() <= code.len() {
        load::span(code, part).start.min(code.len())
    } else {
        code.len()
    };
    let before = code.get(..offset).unwrap_or(code);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    JqError::Parse {
        message,
        offset,
        line,
        column,
    }
}

fn found(part: &str) -> String {
    if part.is_empty() {
        "end of filter".to_owned()
    } else {
        format!("{:?}", toolgate_model::text::cut(part, 20))
    }
}

/// The first error from [`load::Loader::load`].
pub(super) fn load_error<P>(code: &str, errs: load::Errors<&str, P>) -> JqError {
    for (_file, err) in errs {
        match err {
            load::Error::Lex(errs) => {
                if let Some((expect, part)) = errs.into_iter().next() {
                    let message = format!("syntax error: expected {}", expect.as_str());
                    return at(code, part, message);
                }
            }
            load::Error::Parse(errs) => {
                if let Some((expect, part)) = errs.into_iter().next() {
                    let message = format!(
                        "syntax error: expected {}, found {}",
                        expect.as_str(),
                        found(part)
                    );
                    return at(code, part, message);
                }
            }
            load::Error::Io(errs) => {
                if let Some((part, msg)) = errs.into_iter().next() {
                    return at(code, part, format!("modules are not supported ({msg})"));
                }
            }
        }
    }
    JqError::Rejected {
        reason: "the filter does not load".into(),
    }
}

/// The first error from [`compile::Compiler::compile`].
pub(super) fn compile_error<P>(code: &str, errs: compile::Errors<&str, P>) -> JqError {
    let first = errs.into_iter().flat_map(|(_file, errs)| errs).next();
    match first {
        Some((name, undefined)) => {
            let what = match undefined {
                compile::Undefined::Filter(arity) => format!("filter {name}/{arity}"),
                other => format!("{} {name}", other.as_str()),
            };
            at(code, name, format!("undefined {what}"))
        }
        None => JqError::Rejected {
            reason: "the filter does not compile".into(),
        },
    }
}

/// Refuse user-defined functions that call themselves, directly or through a nested
/// definition: unbounded recursion overflows jaq's stack and aborts the process.
pub(super) fn no_recursion(code: &str) -> Result<(), JqError> {
    let Some(term) = load::parse(code, |p| p.term()) else {
        return Err(JqError::Rejected {
            reason: "module directives (module, import, include) are not supported".into(),
        });
    };
    let mut scope = Vec::new();
    match walk(&term, &mut scope) {
        Ok(()) => Ok(()),
        Err(name) => Err(JqError::Rejected {
            reason: format!(
                "recursive definition of {name:?} (offset {}): recursion is not allowed, \
                 use recurse, reduce, foreach, while, until or limit instead",
                load::span(code, name).start
            ),
        }),
    }
}

/// A name in scope: (name, arity, whether we are inside its own definition).
type Scope<'s> = Vec<(&'s str, usize, bool)>;

fn walk<'s>(t: &Term<&'s str>, scope: &mut Scope<'s>) -> Result<(), &'s str> {
    match t {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Break(_) | Term::Var(_) => Ok(()),
        Term::Str(_, parts) => parts.iter().try_for_each(|p| match p {
            StrPart::Term(t) => walk(t, scope),
            StrPart::Str(_) | StrPart::Char(_) => Ok(()),
        }),
        Term::Arr(t) => t.iter().try_for_each(|t| walk(t, scope)),
        Term::Obj(kvs) => kvs.iter().try_for_each(|(k, v)| {
            walk(k, scope)?;
            v.iter().try_for_each(|v| walk(v, scope))
        }),
        Term::Neg(t) | Term::Label(_, t) => walk(t, scope),
        Term::BinOp(l, op, r) => {
            walk(l, scope)?;
            if let load::parse::BinaryOp::Pipe(Some(pattern)) = op {
                walk_pattern(pattern, scope)?;
            }
            walk(r, scope)
        }
        Term::Fold(_, xs, pattern, args) => {
            walk(xs, scope)?;
            walk_pattern(pattern, scope)?;
            args.iter().try_for_each(|t| walk(t, scope))
        }
        Term::TryCatch(t, catch) => {
            walk(t, scope)?;
            catch.iter().try_for_each(|t| walk(t, scope))
        }
        Term::IfThenElse(branches, otherwise) => {
            for (cond, then) in branches {
                walk(cond, scope)?;
                walk(then, scope)?;
            }
            otherwise.iter().try_for_each(|t| walk(t, scope))
        }
        Term::Def(defs, rest) => {
            let outer = scope.len();
            for def in defs {
                scope.push((def.name, def.args.len(), true));
                let own = scope.len() - 1;
                for arg in &def.args {
                    // `def f($x)` binds `$x` and also the filter `x`.
                    scope.push((arg.strip_prefix('$').unwrap_or(arg), 0, false));
                }
                walk(&def.body, scope)?;
                scope.truncate(own + 1);
                scope[own].2 = false;
            }
            walk(rest, scope)?;
            scope.truncate(outer);
            Ok(())
        }
        Term::Call(name, args) => {
            let target = scope
                .iter()
                .rev()
                .find(|(n, arity, _)| n == name && *arity == args.len());
            if let Some((_, _, true)) = target {
                return Err(name);
            }
            args.iter().try_for_each(|t| walk(t, scope))
        }
        Term::Path(t, path) => {
            walk(t, scope)?;
            path.0.iter().try_for_each(|(part, _opt)| match part {
                Part::Index(i) => walk(i, scope),
                Part::Range(from, upto) => from.iter().chain(upto).try_for_each(|t| walk(t, scope)),
            })
        }
    }
}

fn walk_pattern<'s>(p: &Pattern<&'s str>, scope: &mut Scope<'s>) -> Result<(), &'s str> {
    match p {
        Pattern::Var(_) => Ok(()),
        Pattern::Arr(ps) => ps.iter().try_for_each(|p| walk_pattern(p, scope)),
        Pattern::Obj(kps) => kps.iter().try_for_each(|(k, p)| {
            walk(k, scope)?;
            walk_pattern(p, scope)
        }),
    }
}
