#!/usr/bin/env bash
# deps.sh installs what jepsen-lite's runs and tests need, and nothing that is
# already there: the servers under test from Debian's packages, a C compiler
# for the clock-skew library, Chromium for the report tests, nftables
# and iproute2 for the run's network, openssh-server for the ssh backend's
# test hosts, and a JDK with Apache Curator and Gson
# for the Java lock client of examples/anylang. It is
# idempotent: a second run installs nothing and takes well under a second.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have redis-server || need+=(redis-server)
have redis-sentinel || need+=(redis-sentinel)
have etcd || need+=(etcd-server)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
have java || need+=(default-jre-headless)
# examples/anylang/CuratorLock.java: javac, Curator (which brings the
# ZooKeeper client, Guava and SLF4J), SLF4J's simple logger and Gson.
have javac || need+=(default-jdk-headless)
[ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
[ -f /usr/share/java/slf4j-simple.jar ] || need+=(libslf4j-java)
[ -f /usr/share/java/gson.jar ] || need+=(libgoogle-gson-java)
have cc || need+=(gcc)
have make || need+=(make)
have chromium || need+=(chromium)
# The run's links and network faults are nftables rules (docs/network.md);
# a reset destroys the far end of a connection with ss -K.
have nft || need+=(nftables)
have ss || need+=(iproute2)
# The ssh backend's tests run sshd in network namespaces as their hosts
# (make test-ssh, cluster/ssh).
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# The Python lock clients of examples/anylang/ use Debian's packages of the
# libraries (under /usr/lib/python3/dist-packages, found by /usr/bin/python3
# and, through examples/anylang/lockproto.py, by any other python3 3.11).
pydist=/usr/lib/python3/dist-packages
[ -d "$pydist/redis" ] || need+=(python3-redis)
[ -d "$pydist/kazoo" ] || need+=(python3-kazoo)
[ -d "$pydist/etcd3" ] || need+=(python3-etcd3)
[ -d "$pydist/pymysql" ] || need+=(python3-pymysql)

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Debian starts the packaged services on install where it can; the harness
# starts its own on free ports, so stop any that a package started.
for svc in redis-server postgresql zookeeper etcd mariadb ssh; do
  if have service && service "$svc" status >/dev/null 2>&1; then
    service "$svc" stop >/dev/null 2>&1 || true
  fi
done
exit 0
