/// Names longer than 64 characters are rejected by OpenAI and Anthropic.
#[toolgate::tool]
pub fn user_administration_controller_update_user_permission_group_assignments() -> String {
    String::new()
}

fn main() {}
