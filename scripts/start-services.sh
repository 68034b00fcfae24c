#!/usr/bin/env bash
# Start the loopback services the integration tests use (RabbitMQ, PostgreSQL,
# MariaDB) when they are installed but not running. Never installs them: a machine
# without them runs those tests as skipped, unless NOVALAB_REQUIRE_SERVICES=1.
set -uo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 1; done; return 1; }

if ! port_open 5672 && command -v rabbitmq-server >/dev/null; then
  echo "services: starting RabbitMQ"; rabbitmq-server -detached; wait_port 5672 || echo "services: RabbitMQ did not come up" >&2
fi
if ! port_open 5432 && command -v pg_ctlcluster >/dev/null; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_port 5432 || echo "services: PostgreSQL did not come up" >&2
fi
if ! port_open 3306 && [ -x /usr/sbin/mariadbd ]; then
  echo "services: starting MariaDB"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_port 3306 || echo "services: MariaDB did not come up" >&2
fi
exit 0
