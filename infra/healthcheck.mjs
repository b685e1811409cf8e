// The container's health check: GET /health on this node and exit 0 on 200, 1 otherwise
// (503 while Redis is unreachable, no answer, a timeout). Plain node, no curl needed in slim
// images. Reads PORT like the node does; HEALTHCHECK_TIMEOUT_MS bounds the whole check.
import { request } from 'node:http';

const port = Number(process.env.PORT || 3000);
const timeoutMs = Number(process.env.HEALTHCHECK_TIMEOUT_MS || 3000);

const fail = (why) => {
  process.stderr.write(`health check failed: ${why}\n`);
  process.exit(1);
};

const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
const req = request({ host: '127.0.0.1', port, path: '/health', method: 'GET' }, (res) => {
  res.resume();
  clearTimeout(timer);
  if (res.statusCode === 200) process.exit(0);
  fail(`GET /health answered ${res.statusCode}`);
});
req.on('error', (err) => fail(err.message));
req.end();
