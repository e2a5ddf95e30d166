// The @huggingface/hub client against nzip serve (serve/client_test.go):
//   node check.mjs HUB_URL ORG/NAME WANT.json CACHE_DIR
// WANT.json maps each file's path to its SHA-256 (hex). Exits 0 when
// listFiles lists exactly those files and downloadFile,
// downloadFileToCacheDir and snapshotDownload give each one's bytes.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { listFiles, downloadFile, downloadFileToCacheDir, snapshotDownload } from "@huggingface/hub";

const [hubUrl, repo, wantPath, cacheDir] = process.argv.slice(2);
const want = JSON.parse(await readFile(wantPath, "utf8"));
const accessToken = process.env.HF_TOKEN || undefined;
const common = { repo, hubUrl, ...(accessToken ? { accessToken } : {}) };
const sha = (buf) => createHash("sha256").update(buf).digest("hex");
const fail = (msg) => { console.error("hfjs: " + msg); process.exit(1); };

const listed = {};
for await (const e of listFiles({ ...common, recursive: true })) {
	if (e.type === "file") listed[e.path] = e.lfs?.oid;
}
for (const [p, h] of Object.entries(want)) {
	if (listed[p] !== h) fail(`listFiles: ${p}: lfs.oid ${listed[p]}, want ${h}`);
}
if (Object.keys(listed).length !== Object.keys(want).length) fail(`listFiles: ${Object.keys(listed).length} files, want ${Object.keys(want).length}`);

for (const [p, h] of Object.entries(want)) {
	const blob = await downloadFile({ ...common, path: p });
	if (!blob) fail(`downloadFile: ${p}: not found`);
	const got = sha(Buffer.from(await blob.arrayBuffer()));
	if (got !== h) fail(`downloadFile: ${p}: sha256 ${got}, want ${h}`);
	const local = await downloadFileToCacheDir({ ...common, path: p, cacheDir: join(cacheDir, "one") });
	const got2 = sha(await readFile(local));
	if (got2 !== h) fail(`downloadFileToCacheDir: ${p}: sha256 ${got2}, want ${h}`);
}
const snap = await snapshotDownload({ ...common, cacheDir: join(cacheDir, "snap") });
for (const [p, h] of Object.entries(want)) {
	const got = sha(await readFile(join(snap, p)));
	if (got !== h) fail(`snapshotDownload: ${p}: sha256 ${got}, want ${h}`);
}
console.log(JSON.stringify({ ok: true, files: Object.keys(want).length, snapshot: snap }));
