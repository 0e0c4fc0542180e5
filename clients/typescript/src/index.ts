// Baton's TypeScript client: the generated stubs (./gen, also importable as
// "baton-client/gen/baton/v1/agent"), a worker loop and a leadership helper.

export * as agent from "./gen/baton/v1/agent";
export * as leader from "./gen/baton/v1/leader";
export { AgentServiceClient, Lease, Outcome } from "./gen/baton/v1/agent";
export { LeaderServiceClient } from "./gen/baton/v1/leader";
export { classify, Failure, outcomeForHttpStatus } from "./failure";
export { Leadership, LeadershipEvents, LeadershipOptions } from "./leader";
export { duration, isLeaseLost, pushbackMs, unary, CallSettings } from "./rpc";
export { Handler, LeaseLostError, Logger, ShutdownError, Worker, WorkerOptions } from "./worker";
