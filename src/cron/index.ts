/**
 * Cron: Spring's six-field dialect over croner, with leasehold's zone and
 * daylight-saving rules. Pure functions, no I/O, no hidden clock.
 * @module
 */
export { parseCron, type ParseCronOptions } from './parse.js';
export type { CronSchedule } from './schedule.js';
export { validateZone, formatInZone } from './zone.js';
export { remember } from './cache.js';
