#!/bin/sh
# curator_lock.sh runs CuratorLock (Apache Curator's InterProcessMutex, from
# Debian's libcurator-recipes-java) as a jepsen-lite lock client:
#   jepsen-lite run zk-recipe-baseline --lock-command "examples/anylang/curator_lock.sh"
# Build it first with `make anylang` (part of `make build`). With
# --classpath it prints the libraries' classpath (the Makefile compiles with
# it); with --dump-archive it runs as usual and writes the class-data
# archive that later starts map instead of loading and verifying every class.
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-simple.jar:$J/gson.jar
if [ "$1" = "--classpath" ]; then
  echo "$CP"
  exit 0
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
jsa=$root/build/anylang/curator-lock.jsa
cds=
if [ "$1" = "--dump-archive" ]; then
  cds="-XX:ArchiveClassesAtExit=$jsa"
elif [ -f "$jsa" ]; then
  cds="-XX:SharedArchiveFile=$jsa"
fi
# One JVM per worker process, on a machine shared with the servers: a small
# heap, the serial collector, the quick compiler only. The JVM's own
# warnings go to stderr (standard output carries the protocol alone), as do
# the libraries' (SLF4J's simple logger).
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xms16m -Xmx128m $cds \
  -Xlog:disable -Xlog:all=warning:stderr \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
  -cp "$root/build/anylang/curator-lock.jar:$CP" CuratorLock
