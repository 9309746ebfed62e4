// Kafka's jars: no tarball, the classpath is assembled from Maven Central by
// deploy/kafka/pom.xml, whose <kafka.version> is the version we run.

import fs from 'node:fs';
import path from 'node:path';

import { ensureCommand, runLogged } from './apt.mjs';
import { REPO_ROOT, ServiceError } from './config.mjs';

const KAFKA_POM = path.join(REPO_ROOT, 'deploy', 'kafka', 'pom.xml');

function kafkaVersionFromPom() {
  try {
    const pom = fs.readFileSync(KAFKA_POM, 'utf8');
    const m = pom.match(/<kafka\.version>\s*([^<\s]+)\s*<\/kafka\.version>/);
    if (m) return m[1];
  } catch {
    /* reported when the jars are assembled */
  }
  throw new ServiceError(`cannot read <kafka.version> from ${KAFKA_POM}`);
}

function kafkaJarPresent(k) {
  const version = kafkaVersionFromPom();
  return fs.existsSync(path.join(k.libDir, `kafka_2.13-${version}.jar`));
}

export function ensureKafkaJars(cfg, log) {
  const k = cfg.kafka;
  if (kafkaJarPresent(k)) return;
  ensureCommand(cfg, log, 'mvn', 'maven');
  const version = kafkaVersionFromPom();
  log(`installing Kafka ${version} jars from Maven Central into ${k.libDir} …`);
  const t0 = Date.now();
  // Assemble into a fresh directory, then swap it in: a half-copied classpath is never used.
  const tmp = `${k.libDir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(k.libDir), { recursive: true });
  try {
    runLogged(
      cfg,
      'mvn',
      ['-q', '-B', '-f', KAFKA_POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`],
      'assembling the Kafka classpath with Maven',
      { cwd: cfg.repoRoot },
    );
    if (!fs.existsSync(path.join(tmp, `kafka_2.13-${version}.jar`))) {
      throw new ServiceError(`Maven finished but kafka_2.13-${version}.jar is not in ${tmp}`);
    }
    const old = `${k.libDir}.old-${process.pid}`;
    if (fs.existsSync(k.libDir)) fs.renameSync(k.libDir, old);
    fs.renameSync(tmp, k.libDir);
    fs.rmSync(old, { recursive: true, force: true });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  log(`Kafka jars ready (${fs.readdirSync(k.libDir).length} jars, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
