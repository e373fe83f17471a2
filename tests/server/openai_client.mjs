// Run by openai_node_test.sh: the `openai` package against cke-server on CKE_PORT.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({
  baseURL: `http://127.0.0.1:${process.env.CKE_PORT}/v1`,
  apiKey: "node-test",
});

const models = await client.models.list();
assert.equal(models.data[0].id, "stories260K");

const params = { model: "stories260K", prompt: "Once upon a time", max_tokens: 24, temperature: 0 };
const done = await client.completions.create(params);
assert.ok(done.choices[0].text.length > 0);
assert.equal(done.usage.completion_tokens, 24);

let streamed = "";
for await (const chunk of await client.completions.create({ ...params, stream: true }))
  streamed += chunk.choices[0]?.text ?? "";
assert.equal(streamed, done.choices[0].text);

const msgs = [{ role: "user", content: "Tell me a story." }];
const chat = await client.chat.completions.create({
  model: "stories260K", messages: msgs, max_tokens: 16, temperature: 0 });
assert.equal(chat.choices[0].message.role, "assistant");
let chatStreamed = "";
for await (const chunk of await client.chat.completions.create({
  model: "stories260K", messages: msgs, max_tokens: 16, temperature: 0, stream: true }))
  chatStreamed += chunk.choices[0]?.delta?.content ?? "";
assert.equal(chatStreamed, chat.choices[0].message.content);

await assert.rejects(
  new OpenAI({ baseURL: client.baseURL, apiKey: "wrong" }).models.list(),
  (e) => e.status === 401);
await assert.rejects(client.completions.create({ ...params, model: "gpt-4" }), (e) => e.status === 404);
console.log("openai node client: models, completions, chat, streaming, 401, 404 ok");
