// The container's health check: GET /health/ready on this node and exit 0 on 200, 1 otherwise
// (503 while this node cannot reach Redis, no answer, a timeout: a blocked event loop). Not
// /health, which answers 503 as soon as one job is degraded (a failing streak, an invalid
// schedule): a failing job is the job's problem, shown in the status and alerted on, and
// must not mark the node unhealthy. Plain node, no curl needed in slim images. Reads PORT
// like the node does; HEALTHCHECK_TIMEOUT_MS bounds the whole check.
import { request } from 'node:http';

const port = Number(process.env.PORT || 3000);
const timeoutMs = Number(process.env.HEALTHCHECK_TIMEOUT_MS || 3000);

const fail = (why) => {
  process.stderr.write(`health check failed: ${why}\n`);
  process.exit(1);
};

const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
const req = request({ host: '127.0.0.1', port, path: '/health/ready', method: 'GET' }, (res) => {
  res.resume();
  clearTimeout(timer);
  if (res.statusCode === 200) process.exit(0);
  fail(`GET /health/ready answered ${res.statusCode}`);
});
req.on('error', (err) => fail(err.message));
req.end();
