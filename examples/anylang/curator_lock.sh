#!/bin/sh
# curator_lock.sh runs CuratorLock (Apache Curator's InterProcessMutex, from
# Debian's libcurator-recipes-java) as a jepsen-lite lock client:
#   jepsen-lite run zk-recipe-baseline --lock-command "examples/anylang/curator_lock.sh"
# Build it first with `make anylang`. With --classpath it prints the
# libraries' classpath (the Makefile compiles with it).
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar:$J/gson.jar
if [ "$1" = "--classpath" ]; then
  echo "$CP"
  exit 0
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
# A small heap and the serial collector: one JVM per worker process, on a
# machine shared with the servers. The libraries log warnings to stderr.
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xms16m -Xmx128m \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
  -cp "$root/build/anylang:$CP" CuratorLock
