// Baton's TypeScript client: a connection shared by every helper (connect / Client: TLS, token,
// keepalive, default deadline), the generated stubs (./gen, also importable as
// "baton-client/gen/baton/v1/agent"), a producer helper, a worker, a leadership helper, a claim
// helper for pooled resources and a subscriber for scheduled messages; OpenTelemetry trace
// propagation (tracing.ts: the API only; the application brings the SDK).

export * as agent from "./gen/baton/v1/agent";
export * as leader from "./gen/baton/v1/leader";
export * as claim from "./gen/baton/v1/claim";
export * as schedule from "./gen/baton/v1/schedule";
export * as admin from "./gen/baton/v1/admin";
export { Agent, AgentResult, AgentServiceClient, BatchStatus, Finish, IdempotencyMode, Lease, Outcome, ParentFailure, WatchAgentResponse, WatchUpdate } from "./gen/baton/v1/agent";
export { LeaderServiceClient } from "./gen/baton/v1/leader";
export { ClaimServiceClient, PoolStatus, Resource } from "./gen/baton/v1/claim";
export { ScheduleServiceClient } from "./gen/baton/v1/schedule";
export { AdminServiceClient } from "./gen/baton/v1/admin";
export { Client, connect, ConnectOptions, DEFAULT_TIMEOUT_MS, LONG_POLL_MARGIN_MS, PemSource, StubConstructor } from "./client";
export { describeFailure, Failure, FailureReport, HttpError } from "./failure";
export { Leadership, LeadershipEvents, LeadershipOptions } from "./leader";
export { AgentSpec, AWAIT_WAIT_MS, AwaitOptions, BatchOptions, Producer, RegisterAndAwaitOptions, RegisterOptions } from "./producer";
export { backoffMs, CallSettings, duration, idempotent, isLeaseLost, isServiceError, pushbackMs, reason, unary } from "./rpc";
export { Handler, LeaseLostError, Logger, recordedStep, RunCancelledError, ShutdownError, WaitFor, waitFor, Worker, WorkerOptions } from "./worker";
export { Claim, ClaimOptions, Claimer, ClaimerOptions, describeError, LineFullError, Pool, ResourceLike } from "./claim";
export { Message, MessageHandler, ScheduleOptions, Scheduler, Subscriber, SubscriberEvents, SubscriberOptions } from "./schedule";
export { parseTraceparent, traceparentOf, TRACER_NAME, tracingInterceptor } from "./tracing";
