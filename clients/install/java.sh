#!/usr/bin/env bash
# Clean install of the Java client, as a user gets it: `mvn install -DskipTests` of a clean copy
# of clients/java (the jar dev.baton:baton-client goes into the user's local Maven repository,
# ~/.m2), then a fresh Maven project in a temporary directory outside the repository that depends
# on it, with the README's quick-start program as its Main.java, compiled and run against the
# live Baton at $BATON_TARGET (host:port). Prints one line
# "install java: ok (<what was installed>, <seconds> s)"; removes its temporary files.
set -euo pipefail
: "${BATON_TARGET:?set BATON_TARGET to a running Baton (host:port)}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
started=$(date +%s%N)
work=$(mktemp -d -t baton-install-java.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/install.log
fail() { echo "install java: FAILED ($1)" >&2; tail -n 40 "$log" >&2 || true; exit 1; }
MVN=(mvn -B -q -Dstyle.color=never)

# The package's files only (not the checkout's target/, which the test suites use).
mkdir -p "$work/source" "$work/project/src/main/java"
tar -C "$ROOT/clients/java" --exclude=target -cf - pom.xml README.md src examples | tar -C "$work/source" -xf -
"${MVN[@]}" -f "$work/source/pom.xml" install -DskipTests >"$log" 2>&1 || fail "mvn install"
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' "$work/source/pom.xml" | head -n 1)

cd "$work/project"
cat >pom.xml <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>baton-hello</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>dev.baton</groupId>
      <artifactId>baton-client</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
      <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
    </plugins>
  </build>
</project>
EOF
# The README's quick start, as written there: the java block after the install-example marker.
awk '/<!-- install-example/ {found=1; next} found && /^```java/ {on=1; next} on && /^```/ {exit} on' \
  "$ROOT/clients/java/README.md" >src/main/java/Main.java
[ -s src/main/java/Main.java ] || fail "no install-example block in clients/java/README.md"
"${MVN[@]}" compile dependency:build-classpath -Dmdep.outputFile=classpath.txt >>"$log" 2>&1 || fail "mvn compile of the example"
out=$(BATON_TARGET=$BATON_TARGET timeout 60 java -cp "target/classes:$(cat classpath.txt)" Main 2>>"$log") ||
  fail "the example exited $?"
[ "$out" = "hello, world" ] || fail "the example printed '$out'"

tenths=$((($(date +%s%N) - started) / 100000000))
echo "install java: ok (dev.baton:baton-client:$version jar, with grpc-java and opentelemetry-api from Maven Central, $((tenths / 10)).$((tenths % 10)) s)"
