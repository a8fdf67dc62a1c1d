/// Unknown options, bad versions and bad timeouts are errors.
#[toolgate::tool(version = "1.0", timeout = "5 parsecs")]
pub fn a() -> String {
    String::new()
}

/// An unknown option.
#[toolgate::tool(cache_forever)]
pub fn b() -> String {
    String::new()
}

/// `blocking` is for sync functions.
#[toolgate::tool(blocking)]
pub async fn c() -> String {
    String::new()
}

/// A quoted number has no unit (a bare integer is milliseconds).
#[toolgate::tool(timeout = "30")]
pub fn d() -> String {
    String::new()
}

/// A timeout of zero fails every call.
#[toolgate::tool(timeout = 0)]
pub fn e() -> String {
    String::new()
}

/// Unknown argument keys are either rejected or stripped.
#[toolgate::tool(extra = "drop")]
pub fn f() -> String {
    String::new()
}

fn main() {}
