//! The `ServerHandler`: the tool list, the dispatch of `tools/call`, and the task
//! methods. One value per MCP session (stdio: the process; HTTP: one per session the
//! transport opens, or per stateless 2026-07-28 request); everything durable is in the
//! store, so a new session (a restarted server, a reconnecting client) sees the same
//! requests and tasks. Both protocol revision families are served by this one handler
//! ([`super::revision`]).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, TASKS_EXTENSION_ID,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::ask::{self, Who};
use super::backend::Backend;
use super::tools::{self, ToolName};
use super::{client_name, review, review_next, tasks, Config};
use crate::core::audit::{Actor, Source};
use crate::host::auth::Caller;

/// The dshq MCP server.
#[derive(Clone)]
pub struct DshqServer {
    backend: Backend,
    config: Arc<Config>,
    inflight: Arc<tokio::sync::RwLock<()>>,
    reviews: Arc<super::state::Reviews>,
}

impl DshqServer {
    /// A server over `backend`.
    pub fn new(backend: Backend, config: Config) -> DshqServer {
        DshqServer {
            backend,
            config: Arc::new(config),
            inflight: Arc::default(),
            reviews: Arc::default(),
        }
    }

    /// Share `reviews` (the reviews in flight through `input_required`) with the other
    /// servers of this process: over HTTP each stateless 2026-07-28 request gets a server
    /// of its own, and a review's round trips may reach any of them.
    pub fn with_reviews(mut self, reviews: Arc<super::state::Reviews>) -> DshqServer {
        self.reviews = reviews;
        self
    }

    /// Held for reading by every tool call while it runs: whoever takes it for writing
    /// waits until no call is in flight. `dshq mcp` does so before it exits, because the
    /// SDK cancels the calls still running when the client has gone, and a cancelled
    /// review still has its lease to release (a process that ended first would leave the
    /// lease to run out and the request claimed meanwhile).
    pub fn inflight(&self) -> Arc<tokio::sync::RwLock<()>> {
        self.inflight.clone()
    }

    /// Who calls, for this request: over stdio the client's name from `initialize`; over
    /// HTTP the token the transport authenticated (see [`super::http`]), for both the
    /// request's source and the actor (`mcp:TOKEN-NAME`).
    fn who(&self, ctx: &RequestContext<RoleServer>) -> Who {
        // The client's name from `initialize` (2025-11-25 and before) or from the
        // request's own `_meta` (2026-07-28, where there is no handshake).
        let info = ctx.client_info();
        let name = client_name(info.as_ref().map(|i| i.name.as_str()));
        let parts = ctx.extensions.get::<axum::http::request::Parts>();
        let caller = parts.and_then(|p| p.extensions.get::<Caller>()).cloned();
        // The session's agent: the server's over stdio, the request's headers over HTTP
        // (set by the host's MCP configuration; the registry's rules then apply).
        let agent = match parts {
            Some(p) => agent_of(&p.headers),
            None => self.config.agent.clone(),
        };
        // Over HTTP a request is the token's (so it sees the same requests over the API and
        // over MCP, and a client's self-chosen name grants nothing).
        let source = match &caller {
            Some(c) => c.source(),
            None => Source::Mcp(name.clone()),
        };
        // And who acts is the token too: a name the client picks at `initialize` is no
        // identity (any client may say "alice"), so it names the actor over stdio only,
        // where the local user is the caller anyway.
        let actor = match &caller {
            Some(c) => Actor::Mcp(client_name(Some(&c.token.name))),
            None => Actor::Mcp(name),
        };
        Who {
            actor,
            source,
            caller,
            agent,
        }
    }

    fn is_host_without_caller(&self, who: &Who) -> bool {
        matches!(self.backend, Backend::Host(_)) && who.caller.is_none()
    }
}

impl ServerHandler for DshqServer {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder().enable_tools().build();
        caps.extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("dshq", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(
                "dshq is a durable queue of questions for a human. Ask with ask_user_question; \
                 if the result is pending, collect the answer later with get_answer (the question \
                 survives this session). A client that declares the io.modelcontextprotocol/tasks \
                 extension in a request gets a task instead (its id is the request id). A human at \
                 a 2025-11-25 client with elicitation can answer with review_questions; at a \
                 2026-07-28 client with elicitation, review_next answers one question per call \
                 through input_required results. Without elicitation, answer with `dshq answer` or \
                 the web page.",
            )
    }

    /// Every revision up to 2026-07-28, chosen per request: a client that sends
    /// `initialize` gets the handshake-era revision it asks for (2025-11-25 at most; the
    /// SDK answers a handshake naming a later one with 2025-11-25), and a request that
    /// names 2026-07-28 in its own `_meta` is served statelessly at that revision. The
    /// tools are the same behind both ([`Revision`](super::revision::Revision) says what differs).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        ToolName::parse(name).map(tools::tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = ToolName::parse(&request.name) else {
            return Err(McpError::invalid_params(
                format!("no tool named {:?}", request.name),
                None,
            ));
        };
        let _running = self.inflight.clone().read_owned().await;
        let who = self.who(&context);
        if self.is_host_without_caller(&who) {
            return Ok(super::errors::from_error(&crate::error::Error::Unauthorized, None).into());
        }
        let (state, responses) = (request.request_state, request.input_responses);
        let args = request.arguments.unwrap_or_default();
        let (b, cfg) = (&self.backend, &self.config);
        tracing::debug!(tool = tool.as_str(), actor = %who.actor, "MCP tool call");
        // A task only when this request declares the tasks extension in its own
        // capabilities (`_meta`): the extension decides per request, so a client that
        // declared it at `initialize` and calls without it gets the usual result.
        let tasks_ok = super::tasks::requested(&context);
        Ok(match tool {
            ToolName::Ask if tasks_ok => tasks::create(b, cfg, &who, args).await,
            ToolName::Ask => ask::ask_user_question(b, cfg, &who, args).await.into(),
            ToolName::GetAnswer => ask::get_answer(b, cfg, &who, args).await.into(),
            ToolName::Abort => ask::abort_question(b, &who, args).await.into(),
            ToolName::Review => review::review_questions(b, cfg, &who, args, &context)
                .await
                .into(),
            ToolName::ReviewNext => {
                let call = review_next::Call {
                    who: &who,
                    args,
                    state,
                    responses,
                    ctx: &context,
                };
                review_next::review_next(b, cfg, &self.reviews, call).await
            }
        })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let who = self.who(&context);
        tasks::get(&self.backend, &who, &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = self.who(&context);
        tasks::cancel(&self.backend, &who, &request.task_id).await
    }
}

/// The asking agent a request names in its `Dshq-Agent-Id` and `Dshq-Agent-Instance`
/// headers (both, or none).
pub fn agent_of(headers: &axum::http::HeaderMap) -> Option<crate::protocol::types::AgentRef> {
    let get = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Some(crate::protocol::types::AgentRef {
        id: get("dshq-agent-id")?,
        instance: get("dshq-agent-instance")?,
    })
}
