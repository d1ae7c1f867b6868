// Every port reconcile() talks through, in one place. src/ports imports only src/api (test/unit/layers.test.ts):
// the adapters implement these interfaces, and so does the simulator's world.
export type { Clock } from "./clock.ts";
export {
  classifyRefusal,
  EtcdRetryLaterError,
  retryLaterOf,
  type AddMemberOptions,
  type EtcdAlarm,
  type EtcdClusterClient,
  type EtcdMember,
  type EtcdMemberStatus,
  type EtcdRefusal,
  type ListMembersOptions,
  type PromoteResult,
} from "./etcd.ts";
export type { LogMeta, Logger } from "./log.ts";
export { isConflict, isNotFound, type InPlacePatch, type ManagementApi } from "./management.ts";
export type {
  ApiServerReadiness,
  CertificatesExpiries,
  ControlPlaneComponent,
  NodeQuery,
  ServingMachine,
  TemplateReader,
  WorkloadAccess,
  WorkloadStep,
  WorkloadSteps,
} from "./workload.ts";
