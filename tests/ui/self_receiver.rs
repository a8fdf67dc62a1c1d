pub struct Service;

impl Service {
    /// Methods are not tools.
    #[toolgate::tool]
    pub fn run(&self, query: String) -> String {
        query
    }
}

fn main() {}
