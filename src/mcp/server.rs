//! The MCP face of [`OwnerTools`]: an rmcp server handler that lists the tools and runs a call
//! through the same [`OwnerTools::call`] the OpenAI backend uses.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use super::tools::{OwnerTools, specs};

/// One MCP session's handler (the HTTP service makes one per session from the endpoint's tools).
#[derive(Clone)]
pub struct ToolServer {
    tools: OwnerTools,
}

impl ToolServer {
    /// A handler over `tools`.
    pub fn new(tools: OwnerTools) -> Self {
        ToolServer { tools }
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("scv-bridge", env!("CARGO_PKG_VERSION")))
            .with_instructions("Reach the owner of this bridge: send, ask yes/no, schedule.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = specs()
            .into_iter()
            .map(|s| {
                let schema = match s.parameters {
                    Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                Tool::new(s.name, s.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match self.tools.call(&request.name, &args).await {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
        };
        Ok(result.into())
    }
}
