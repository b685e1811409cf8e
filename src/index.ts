export { LeaseholdError, ErrorCodes, isLeaseholdError } from "./errors.js";
