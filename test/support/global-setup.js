// Probes the servers the e2e suites use, once per run, and tells the workers through the environment.
// REQUIRE_SERVICES=1 (CI) makes their suites fail instead of skip when a server is down.
const net = require('node:net');

function reachable(host, port, timeoutMs = 1500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function mysqlAnswers() {
  const host = process.env.TEST_DB_HOST || '127.0.0.1';
  const port = Number(process.env.TEST_DB_PORT || 3306);
  if (!(await reachable(host, port))) return `nothing listens on ${host}:${port}`;
  try {
    const mysql = require('mysql2/promise');
    const conn = await mysql.createConnection({
      host,
      port,
      user: process.env.TEST_DB_USER || 'root',
      password: process.env.TEST_DB_PASSWORD || '',
      connectTimeout: 3000,
    });
    await conn.query('SELECT 1');
    await conn.end();
    return '';
  } catch (err) {
    return err.message;
  }
}

async function redisAnswers() {
  const url = new URL(process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379');
  const port = Number(url.port || 6379);
  return (await reachable(url.hostname, port)) ? '' : `nothing listens on ${url.hostname}:${port}`;
}

module.exports = async () => {
  const [mysql, redis] = await Promise.all([mysqlAnswers(), redisAnswers()]);
  process.env.LG_MYSQL_DOWN = mysql;
  process.env.LG_REDIS_DOWN = redis;
  const required = process.env.REQUIRE_SERVICES === '1';
  for (const [name, reason] of [
    ['MariaDB/MySQL', mysql],
    ['Redis', redis],
  ]) {
    if (!reason) continue;
    const verdict = required ? 'their suites will FAIL (REQUIRE_SERVICES=1)' : 'their suites are SKIPPED';
    process.stderr.write(`\n[livegoods tests] ${name} unavailable (${reason}): ${verdict}\n`);
  }
};
