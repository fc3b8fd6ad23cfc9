/**
 * docs/examples/kubernetes.yml, the example docs/deployment.md shows, is valid YAML of the objects it
 * says (a Secret, a Deployment of two replicas with probes, a Service), and everything in it that
 * names something of hookbot names something that exists: environment variables hookbot reads,
 * secret keys the Secret holds, the probes' routes, the port the image listens on.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { configKeys, leafKeys } from '../../src/config/config-keys.ts';
import { OTHER_VARIABLES } from '../../src/config/unknown-env.ts';

const FILE = new URL('../../docs/examples/kubernetes.yml', import.meta.url);

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
interface Container {
  name: string;
  args?: string[];
  ports: { name: string; containerPort: number }[];
  env: EnvVar[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
    template?: { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
    ports?: { port: number; targetPort: string }[];
  };
}

function objects(): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(FILE, 'utf8'));
  for (const doc of docs) expect(doc.errors.map((e) => e.message)).toEqual([]);
  return docs.map((doc) => doc.toJS() as K8sObject);
}

describe('the Kubernetes example (docs/examples/kubernetes.yml)', () => {
  const all = objects();
  const byKind = (kind: string) => all.filter((o) => o.kind === kind);

  it('is a Secret, a Deployment of two replicas and a Service', () => {
    expect(all.map((o) => o.kind).sort()).toEqual(['Deployment', 'Secret', 'Service']);
    expect(byKind('Deployment')[0]!.spec!.replicas).toBe(2);
  });

  it('gives the database URL from the Secret, and every secret it refers to is in the Secret', () => {
    const secret = byKind('Secret')[0]!;
    const container = byKind('Deployment')[0]!.spec!.template!.spec.containers[0]!;
    const database = container.env.find((e) => e.name === 'HOOKBOT_DATABASE_URL');
    expect(database?.valueFrom?.secretKeyRef).toBeDefined();
    for (const variable of container.env) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (ref === undefined) continue;
      expect(ref.name).toBe(secret.metadata.name);
      expect(Object.keys(secret.stringData ?? {})).toContain(ref.key);
    }
    expect(secret.stringData?.['database-url']).toMatch(/^postgres:\/\//);
  });

  it('sets only variables hookbot reads', () => {
    const known = new Set([
      ...leafKeys(configKeys()).flatMap((key) => (key.env === undefined ? [] : [key.env])),
      ...OTHER_VARIABLES,
    ]);
    const container = byKind('Deployment')[0]!.spec!.template!.spec.containers[0]!;
    for (const variable of container.env) expect(known, variable.name).toContain(variable.name);
  });

  it("probes /healthz and /readyz on the image's port, and the Service selects the pods", () => {
    const deployment = byKind('Deployment')[0]!;
    const container = deployment.spec!.template!.spec.containers[0]!;
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    const ops = readFileSync(new URL('../../src/receiver/ops-app.ts', import.meta.url), 'utf8');
    expect(ops).toContain("app.get('/healthz'");
    expect(ops).toContain("app.get('/readyz'");
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    const port = /HOOKBOT_PORT=(\d+)/.exec(dockerfile)?.[1];
    const http = container.ports.find((p) => p.name === container.readinessProbe.httpGet.port);
    expect(String(http?.containerPort)).toBe(port);
    const service = byKind('Service')[0]!;
    expect(service.spec!.selector).toEqual(deployment.spec!.template!.metadata.labels);
    expect(service.spec!.ports![0]!.targetPort).toBe(http?.name);
  });
});
