/**
 * leasehold: a distributed scheduled-job runner for Node.js, coordinated through Redis.
 *
 * Every node of a service runs the same jobs on its own timer; a job with
 * `scope: 'installation'` runs once per tick for the whole installation, under a Redis lease
 * that is extended while it runs and aborts the run when lost. Outcomes are counted in Redis,
 * so any node serves the same status.
 *
 * @example
 * ```ts
 * import { createRunner, defineJob } from 'leasehold';
 *
 * const runner = createRunner({ redisUrl: process.env.REDIS_URL });
 * runner.add(defineJob({
 *   id: 'daily-digest',
 *   scope: 'installation',
 *   cron: '0 0 8 * * MON-FRI',
 *   zone: 'Europe/Berlin',
 *   async run(ctx) {
 *     ctx.log.info('sending the digest');
 *   },
 * }));
 * await runner.start();
 * process.once('SIGTERM', () => void runner.stop());
 * ```
 *
 * @packageDocumentation
 */

// Errors
export { LeaseholdError, ErrorCodes, AbortReasonCodes, isLeaseholdError, type ErrorCode, type AbortReasonCode } from './errors.js';

// Defining jobs
export {
  defineJob,
  JobScopes,
  type JobDefinition,
  type JobDefinitionBase,
  type CronJobDefinition,
  type FixedRateJobDefinition,
  type FixedDelayJobDefinition,
  type JobDefinitionLike,
  type JobContext,
  type JobHandler,
  type JobScope,
} from './schedule/job.js';
export { fromEnv, type EnvSetting } from './schedule/setting.js';
export { parseDuration, type Duration, type DurationUnit } from './schedule/duration.js';
export type { RetryOptions } from './schedule/retry.js';
export { parseCron, type CronSchedule, type ParseCronOptions } from './cron/index.js';

// Jobs on class methods
export { Scheduled, type ScheduledOptions } from './decorators/scheduled.js';
export { Async, type AsyncOptions } from './decorators/async.js';
export type { ScheduledDecorator, AsyncDecorator } from './decorators/modes.js';
export type { RegisterOptions } from './decorators/register.js';

// Background tasks
export {
  defineTask,
  type TaskDefinition,
  type TaskContext,
  type TaskHandler,
  type TaskHandle,
  type SubmitOptions,
  type ExecutorConfig,
  type ExecutorStats,
  isWorkerThread,
} from './tasks/index.js';
export type { WorkerResourceLimits } from './schedule/limits.js';
export { ExecutorKinds, type ExecutorKind, type JobThread, type SubmitTask, type TaskReference } from './schedule/submit.js';

// Running them
export { createRunner, UnhandledModes, type Runner, type RunnerOptions, type MetricsRegistry, type UnhandledMode } from './create/index.js';
export type { JobInfo } from './runner/runner.js';
export type { Clock, TimerHandle } from './clock.js';
export type { RedisClient } from './redis/connection.js';
export type { Logger, LogFn } from './logger.js';

// Lifecycle events
export {
  RunOutcomes,
  SkipReasons,
  JobStates,
  type RunOutcome,
  type SkipReason,
  type JobState,
  type RunnerEvents,
  type Listener,
  type RunStartedEvent,
  type RunEndedEvent,
  type SkippedEvent,
  type MissedEvent,
  type ScheduledEvent,
  type JobStateEvent,
  type JobRemovedEvent,
  type ClockStepEvent,
  type TaskEndedEvent,
  type WarningEvent,
} from './runner/events.js';

// The cluster's status
export type {
  ClusterStatus,
  JobStatus,
  JobDetail,
  InstanceStatus,
  InstanceRow,
  LeaseStatus,
  ScheduleStatus,
  StatusState,
  JobCounters,
  InstanceCounters,
  StatusProblem,
} from './status/model.js';
export { StatusStates } from './status/model.js';
export type { RecentRun } from './status/batch.js';
export type { JobsPage, JobsQuery } from './status/page.js';
