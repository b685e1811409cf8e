/**
 * leasehold: a distributed scheduled-job runner coordinated through Redis.
 * @packageDocumentation
 */
export { LeaseholdError, ErrorCodes, isLeaseholdError, type ErrorCode, type AbortReasonCode } from './errors.js';
export { defineJob, fromEnv, JobScopes, type JobDefinition, type JobContext, type JobHandler, type JobScope, type EnvSetting } from './schedule/job.js';
export { parseDuration, type Duration } from './schedule/duration.js';
export { parseCron, type CronSchedule } from './cron/index.js';
export { createRunner, type Runner, type RunnerOptions } from './create.js';
export type { Clock } from './clock.js';
export type { JobView } from './runner/runner.js';
export {
  RunOutcomes,
  SkipReasons,
  JobStates,
  type RunOutcome,
  type SkipReason,
  type JobState,
  type RunnerEvents,
  type RunStartedEvent,
  type RunEndedEvent,
  type SkippedEvent,
  type MissedEvent,
} from './runner/events.js';
export type { ClusterStatus, JobStatus, JobDetail, InstanceStatus, InstanceRow, LeaseStatus, ScheduleStatus, StatusState } from './status/model.js';
