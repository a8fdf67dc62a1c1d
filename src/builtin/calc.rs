//! `calc`: evaluate an arithmetic or boolean expression.
//!
//! Built on `evalexpr` (13.x): a small, dependency-free expression language with integers,
//! floats, booleans, comparisons and functions. It has no loops and no side effects here: the
//! context is read-only (assignments such as `a = 1` fail), so the work is linear in the input,
//! which is capped at [`MAX_EXPRESSION_CHARS`] characters and [`MAX_NESTING`] levels of
//! parentheses (the evaluator is recursive). Only numbers and booleans are returned.

use std::sync::LazyLock;

use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, Function,
    HashMapContext, Value,
};
use serde::{Deserialize, Serialize};

/// Longest accepted expression, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 4096;
/// Deepest accepted nesting of parentheses.
pub const MAX_NESTING: usize = 64;

/// Arguments of `calc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalcArgs {
    /// The expression to evaluate, e.g. "2 * (3 + 4) ^ 2", "sqrt(2) / 2", "min(3, 1.5)",
    /// "17 % 5 == 2 && pi > 3". Operators: + - * / % ^ (power, always a float), comparisons
    /// (== != < <= > >=), boolean && || !. Integer division truncates (7 / 2 = 3): write
    /// 7.0 / 2 for 3.5. Functions: sqrt cbrt abs exp exp2 ln log2 log10 log(x, base)
    /// pow(x, y) hypot(x, y) sin cos tan asin acos atan atan2(y, x) sinh cosh tanh (radians)
    /// floor ceil round min(a, b, ...) max(a, b, ...) if(cond, a, b). Constants: pi, e, tau.
    /// At most 4096 characters; no variables or assignments.
    pub expression: String,
}

/// The value of an expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalcResult {
    /// The expression, as given.
    pub expression: String,
    /// Its value: an integer (64-bit), a finite floating-point number, or a boolean.
    pub value: CalcValue,
}

/// A number or a boolean; serialized as the plain JSON value (`3`, `2.5`, `true`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum CalcValue {
    /// A 64-bit signed integer.
    Int(i64),
    /// A finite 64-bit floating-point number.
    Float(f64),
    /// A boolean, from a comparison or a logical operator.
    Bool(bool),
}

/// Why `calc` failed. Every variant is a problem with the expression (invalid arguments).
#[derive(Debug, thiserror::Error)]
pub enum CalcError {
    /// The expression is empty or too long or too deeply nested.
    #[error("expression rejected: {reason}")]
    Rejected {
        /// What is wrong, e.g. "longer than 4096 characters".
        reason: String,
    },
    /// The expression does not parse (evalexpr reports no position).
    #[error("cannot parse expression: {message}")]
    Parse {
        /// The parser's message.
        message: String,
    },
    /// The expression parses but cannot be evaluated (unknown name, wrong types, overflow,
    /// division by zero, ...).
    #[error("cannot evaluate expression: {message}")]
    Eval {
        /// The evaluator's message.
        message: String,
    },
    /// The expression evaluates to something that is not a finite number or a boolean.
    #[error("expression must evaluate to a finite number or a boolean, not {found}")]
    NotANumber {
        /// What it evaluated to, e.g. "a string", "inf", "NaN".
        found: String,
    },
}

type Ctx = HashMapContext<DefaultNumericTypes>;
type Unary = fn(f64) -> f64;
type Binary = fn(f64, f64) -> f64;

static CONTEXT: LazyLock<Ctx> = LazyLock::new(|| {
    let mut ctx = Ctx::new();
    let constants = [
        ("pi", std::f64::consts::PI),
        ("e", std::f64::consts::E),
        ("tau", std::f64::consts::TAU),
    ];
    for (name, value) in constants {
        ctx.set_value(name.into(), Value::Float(value))
            .expect("fresh context accepts constants");
    }
    let unary: [(&str, Unary); 19] = [
        ("sqrt", f64::sqrt),
        ("cbrt", f64::cbrt),
        ("exp", f64::exp),
        ("exp2", f64::exp2),
        ("ln", f64::ln),
        ("log2", f64::log2),
        ("log10", f64::log10),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("tan", f64::tan),
        ("asin", f64::asin),
        ("acos", f64::acos),
        ("atan", f64::atan),
        ("sinh", f64::sinh),
        ("cosh", f64::cosh),
        ("tanh", f64::tanh),
        ("asinh", f64::asinh),
        ("acosh", f64::acosh),
        ("atanh", f64::atanh),
    ];
    for (name, f) in unary {
        let fun = Function::new(move |arg: &Value| Ok(Value::Float(f(arg.as_number()?))));
        ctx.set_function(name.into(), fun)
            .expect("fresh context accepts functions");
    }
    let binary: [(&str, Binary); 4] = [
        ("log", f64::log),
        ("pow", f64::powf),
        ("hypot", f64::hypot),
        ("atan2", f64::atan2),
    ];
    for (name, f) in binary {
        let fun = Function::new(move |arg: &Value| {
            let args = arg.as_fixed_len_tuple(2)?;
            Ok(Value::Float(f(args[0].as_number()?, args[1].as_number()?)))
        });
        ctx.set_function(name.into(), fun)
            .expect("fresh context accepts functions");
    }
    let abs = Function::new(|arg: &Value| match arg {
        Value::Int(i) => i
            .checked_abs()
            .map(Value::Int)
            .ok_or_else(|| evalexpr::EvalexprError::CustomMessage(format!("abs({i}) overflows"))),
        other => Ok(Value::Float(other.as_number()?.abs())),
    });
    ctx.set_function("abs".into(), abs)
        .expect("fresh context accepts functions");
    ctx
});

/// Evaluate `args.expression`.
pub fn calc(args: CalcArgs) -> Result<CalcResult, CalcError> {
    let expression = args.expression;
    check_shape(&expression)?;
    let tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(&expression).map_err(|e| {
        CalcError::Parse {
            message: e.to_string(),
        }
    })?;
    let value = tree
        .eval_with_context(&*CONTEXT)
        .map_err(|e| CalcError::Eval {
            message: e.to_string(),
        })?;
    let value = match value {
        Value::Int(i) => CalcValue::Int(i),
        Value::Float(f) if f.is_finite() => CalcValue::Float(f),
        Value::Float(f) => {
            return Err(CalcError::NotANumber {
                found: f.to_string(),
            });
        }
        Value::Boolean(b) => CalcValue::Bool(b),
        Value::String(_) => return Err(not_a_number("a string")),
        Value::Tuple(_) => return Err(not_a_number("a tuple (several comma-separated values)")),
        Value::Empty => return Err(not_a_number("nothing")),
    };
    Ok(CalcResult { expression, value })
}

fn not_a_number(found: &str) -> CalcError {
    CalcError::NotANumber {
        found: found.to_owned(),
    }
}

fn check_shape(expression: &str) -> Result<(), CalcError> {
    let reject = |reason: String| Err(CalcError::Rejected { reason });
    if expression.trim().is_empty() {
        return reject("the expression is empty".into());
    }
    // evalexpr reads `//` and `/* */` as comments: `7 // 2` would silently be `7`.
    if expression.contains("//") || expression.contains("/*") {
        return reject(
            "`//` and `/*` are not operators here (they would start a comment); use `/` for division and `floor(a / b)` for integer division".into(),
        );
    }
    let chars = expression.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return reject(format!(
            "{chars} characters, more than the limit of {MAX_EXPRESSION_CHARS}"
        ));
    }
    // The parser and the evaluator recurse once per nesting level; unary operators nest too.
    let (mut depth, mut max_depth, mut unary_run) = (0usize, 0usize, 0usize);
    for c in expression.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if matches!(c, '-' | '!' | '+') {
            unary_run += 1;
        } else if !c.is_whitespace() {
            unary_run = 0;
        }
        max_depth = max_depth.max(depth).max(unary_run);
    }
    if max_depth > MAX_NESTING {
        return reject(format!(
            "nested more than {MAX_NESTING} levels deep (parentheses or repeated signs)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expression: &str) -> Result<CalcValue, CalcError> {
        calc(CalcArgs {
            expression: expression.to_owned(),
        })
        .map(|r| r.value)
    }

    #[test]
    fn arithmetic() {
        assert_eq!(eval("2 * (3 + 4) ^ 2").unwrap(), CalcValue::Float(98.0));
        assert_eq!(eval("1 + 2 * 3").unwrap(), CalcValue::Int(7));
        assert_eq!(eval("7 / 2").unwrap(), CalcValue::Int(3));
        assert_eq!(eval("7.0 / 2").unwrap(), CalcValue::Float(3.5));
        assert_eq!(eval("17 % 5").unwrap(), CalcValue::Int(2));
        assert_eq!(eval("-3 + 1").unwrap(), CalcValue::Int(-2));
        assert_eq!(eval("min(1, 2)").unwrap(), CalcValue::Int(1));
        assert_eq!(eval("max(1, 2.5, -3)").unwrap(), CalcValue::Float(2.5));
        assert_eq!(eval("abs(-4)").unwrap(), CalcValue::Int(4));
        assert_eq!(
            eval("floor(2.7) + ceil(0.2)").unwrap(),
            CalcValue::Float(3.0)
        );
        assert_eq!(eval("if(3 > 2, 10, 20)").unwrap(), CalcValue::Int(10));
    }

    #[test]
    fn functions_and_constants() {
        let CalcValue::Float(v) = eval("sqrt(2)").unwrap() else {
            panic!()
        };
        assert!((v - std::f64::consts::SQRT_2).abs() < 1e-12);
        let CalcValue::Float(v) = eval("sin(pi / 2) + log(8, 2) + ln(e) + pow(2, 10)").unwrap()
        else {
            panic!()
        };
        assert!((v - 1029.0).abs() < 1e-9, "{v}");
        assert_eq!(eval("hypot(3, 4)").unwrap(), CalcValue::Float(5.0));
        assert_eq!(eval("log10(1000)").unwrap(), CalcValue::Float(3.0));
        assert_eq!(eval("math::sqrt(16)").unwrap(), CalcValue::Float(4.0));
    }

    #[test]
    fn booleans() {
        assert_eq!(eval("1 < 2").unwrap(), CalcValue::Bool(true));
        assert_eq!(eval("2 + 2 == 5").unwrap(), CalcValue::Bool(false));
        assert_eq!(eval("!(1 > 2) && 3 >= 3").unwrap(), CalcValue::Bool(true));
    }

    #[test]
    fn result_json() {
        let r = calc(CalcArgs {
            expression: "1.5 * 2".into(),
        })
        .unwrap();
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"expression": "1.5 * 2", "value": 3.0})
        );
        let json = serde_json::to_value(CalcValue::Int(3)).unwrap();
        assert_eq!(json, serde_json::json!(3));
        let json = serde_json::to_value(CalcValue::Bool(true)).unwrap();
        assert_eq!(json, serde_json::json!(true));
    }

    #[test]
    fn errors() {
        for bad in ["2 +", "(1 + 2", "1 +* 2", "3 4)", "#"] {
            let err = eval(bad).unwrap_err();
            assert!(
                matches!(err, CalcError::Parse { .. } | CalcError::Eval { .. }),
                "{bad}: {err}"
            );
        }
        assert!(matches!(eval("1 / 0"), Err(CalcError::Eval { .. })));
        assert!(matches!(
            eval("9223372036854775807 + 1"),
            Err(CalcError::Eval { .. })
        ));
        assert!(matches!(
            eval("abs(-9223372036854775807 - 1)"),
            Err(CalcError::Eval { .. })
        ));
        let err = eval("foo(1)").unwrap_err();
        assert!(err.to_string().contains("foo"), "{err}");
        assert!(matches!(eval("x + 1"), Err(CalcError::Eval { .. })));
        // No assignments or side effects: the context is read-only.
        assert!(matches!(eval("a = 1"), Err(CalcError::Eval { .. })));
        assert!(matches!(eval("pi = 3"), Err(CalcError::Eval { .. })));
        assert!(matches!(eval("x = 1; x"), Err(CalcError::Eval { .. })));
        assert_eq!(eval("pi").unwrap(), CalcValue::Float(std::f64::consts::PI));
        // Results that are not numbers or booleans.
        assert!(matches!(
            eval(r#""a" + "b""#),
            Err(CalcError::NotANumber { .. })
        ));
        assert!(matches!(eval("1, 2"), Err(CalcError::NotANumber { .. })));
        assert!(matches!(eval("()"), Err(CalcError::NotANumber { .. })));
        assert!(matches!(eval("1.0 / 0"), Err(CalcError::NotANumber { .. })));
        assert!(matches!(
            eval("sqrt(-1)"),
            Err(CalcError::NotANumber { .. })
        ));
        assert!(matches!(
            eval("10 ^ 400"),
            Err(CalcError::NotANumber { .. })
        ));
    }

    #[test]
    fn comments_are_refused_not_silently_dropped() {
        assert!(matches!(eval("7 // 2"), Err(CalcError::Rejected { .. })));
        assert!(matches!(
            eval("1 /* c */ + 2"),
            Err(CalcError::Rejected { .. })
        ));
    }

    #[test]
    fn bounded_input() {
        assert!(matches!(eval(""), Err(CalcError::Rejected { .. })));
        assert!(matches!(eval("   "), Err(CalcError::Rejected { .. })));
        let long = vec!["1"; 2049].join("+");
        assert!(matches!(eval(&long), Err(CalcError::Rejected { .. })));
        let ok = vec!["1"; 2048].join("+");
        assert_eq!(eval(&ok).unwrap(), CalcValue::Int(2048));
        let deep = format!("{}1{}", "(".repeat(65), ")".repeat(65));
        assert!(matches!(eval(&deep), Err(CalcError::Rejected { .. })));
        let deep = format!("{}1{}", "(".repeat(64), ")".repeat(64));
        assert_eq!(eval(&deep).unwrap(), CalcValue::Int(1));
        assert!(matches!(
            eval(&"-".repeat(4000)),
            Err(CalcError::Rejected { .. })
        ));
    }

    #[test]
    fn worst_case_fits_a_small_stack() {
        // The tool may run on a runtime worker thread; 64 nested levels must not overflow it.
        let worst = format!("{}1{}", "(-".repeat(64), ")".repeat(64));
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || eval(&worst).map(|_| ()).map_err(|e| e.to_string()))
            .unwrap();
        let _ = handle.join().expect("no stack overflow");
        let long = vec!["(1+(2*3))"; 400].join("+");
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || eval(&long).map(|_| ()).map_err(|e| e.to_string()))
            .unwrap();
        handle.join().expect("no stack overflow").unwrap();
    }

    #[test]
    fn strict_args() {
        assert!(serde_json::from_str::<CalcArgs>(r#"{"expression":"1","x":1}"#).is_err());
        assert!(serde_json::from_str::<CalcArgs>(r#"{}"#).is_err());
    }
}
