//! What a call through the gateway carries besides its name and arguments ([`CallExtras`]),
//! and the count of calls in flight that shutdown waits for ([`InFlight`]).

use std::sync::Arc;

use tokio::sync::watch;
use toolgate_runtime::CancelReason;

use super::servers::VirtualServer;

/// The parts of a call only some fronts give: the slot where the client's reason for
/// cancelling lands (MCP `notifications/cancelled`), and the virtual server the call came
/// through (`gateway.servers`).
#[derive(Default)]
pub(crate) struct CallExtras {
    /// Set before the call's token is cancelled; passed on to the tool's backend.
    pub(crate) reason: Option<CancelReason>,
    /// The call's scope: its guardrails run besides the tool's own
    /// ([`toolgate_runtime::Toolset::call_guarded`]), and every call made on the call's
    /// behalf (a tool calling tools, code run by `run_python`) stays inside the server and
    /// passes them too ([`toolgate_runtime::ToolContext::call_tool`]).
    pub(crate) server: Option<Arc<VirtualServer>>,
}

/// One call in flight, counted while it lives.
pub(crate) struct InFlight<'a>(&'a watch::Sender<usize>);

impl<'a> InFlight<'a> {
    pub(crate) fn enter(count: &'a watch::Sender<usize>) -> Self {
        count.send_modify(|n| *n += 1);
        Self(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}
