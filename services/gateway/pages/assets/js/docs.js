// The API's documentation, drawn here from the served /openapi.json: every operation by tag,
// with its parameters, body and answers, and every shape. No script or style from elsewhere.
import { get, Refusal } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";

const METHODS = ["get", "post", "put", "patch", "delete"];

function refName(ref) {
  return ref.split("/").pop();
}

/** A schema in a few words: "Action", "array of Card", "integer ≥ 0", "string | null". */
function typeWords(schema) {
  if (!schema) return "";
  if (schema.$ref) return refName(schema.$ref);
  if (schema.anyOf || schema.oneOf) return (schema.anyOf || schema.oneOf).map(typeWords).join(" | ");
  if (schema.allOf) return schema.allOf.map(typeWords).join(" & ");
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type === "array") return `array of ${typeWords(schema.items)}`;
  const bounds = [];
  if (schema.minimum !== undefined) bounds.push(`≥ ${schema.minimum}`);
  if (schema.maximum !== undefined) bounds.push(`≤ ${schema.maximum}`);
  if (schema.maxLength !== undefined) bounds.push(`at most ${schema.maxLength} chars`);
  return [schema.type || "any", ...bounds].join(" ");
}

function link(schema) {
  const words = typeWords(schema);
  if (schema && schema.$ref) return h("a", { href: `#schema-${refName(schema.$ref)}` }, words);
  return h("code", {}, words);
}

function operation(method, path, op) {
  const params = op.parameters || [];
  const body = op.requestBody && op.requestBody.content;
  const responses = Object.entries(op.responses || {});
  const id = `${method} ${path}`;
  return h("details", { class: "op", dataset: { operation: id } },
    h("summary", {}, h("span", { class: ["method", `method-${method}`] }, method), h("span", { class: "path" }, path), h("span", {}, op.summary || "")),
    h("div", { class: "body" },
      op.description ? op.description.split("\n\n").map((para) => h("p", {}, para)) : null,
      params.length ? h("table", {},
        h("caption", {}, "Parameters"),
        h("thead", {}, h("tr", {}, ["Name", "In", "Type", "Required", "What"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, params.map((p) => h("tr", {}, h("td", {}, h("code", {}, p.name)), h("td", {}, p.in), h("td", {}, link(p.schema)), h("td", {}, p.required ? "yes" : "no"), h("td", {}, p.description || (p.schema && p.schema.description) || ""))))) : null,
      body ? h("p", {}, "Body: ", Object.entries(body).map(([type, content]) => [h("code", {}, type), " ", link(content.schema)])) : null,
      h("table", {},
        h("caption", {}, "Answers"),
        h("thead", {}, h("tr", {}, ["Status", "What", "Shape"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, responses.map(([status, response]) => {
          const content = Object.entries(response.content || {});
          return h("tr", { dataset: { status } }, h("td", {}, status), h("td", {}, response.description || ""),
            h("td", {}, content.map(([type, c]) => [h("code", {}, type), " ", c.schema ? link(c.schema) : null, " "])));
        })))));
}

function schemaSection(name, schema) {
  const properties = Object.entries(schema.properties || {});
  const required = new Set(schema.required || []);
  return h("details", { class: "op", id: `schema-${name}`, dataset: { schema: name } },
    h("summary", {}, h("strong", {}, name), h("span", { class: "quiet" }, schema.description ? schema.description.split("\n")[0] : typeWords(schema))),
    h("div", { class: "body" },
      properties.length ? h("table", {},
        h("thead", {}, h("tr", {}, ["Field", "Type", "Required", "What"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, properties.map(([field, s]) => h("tr", {}, h("td", {}, h("code", {}, field)), h("td", {}, link(s)), h("td", {}, required.has(field) ? "yes" : "no"), h("td", {}, s.description || ""))))) : h("p", {}, link(schema))));
}

async function start() {
  let doc;
  try {
    doc = await get("/openapi.json");
  } catch (error) {
    replaceChildren(byId("intro"), h("p", { role: "alert" }, error instanceof Refusal ? error.detail : String(error)));
    return;
  }
  document.title = `${doc.info.title} API ${doc.info.version}`;
  replaceChildren(byId("title"), `${doc.info.title} HTTP API v${doc.info.version}`);
  replaceChildren(byId("intro"), (doc.info.description || "").split("\n\n").map((para) => h("p", {}, para)),
    h("p", { class: "quiet" }, `OpenAPI ${doc.openapi}. Seat tokens and platform keys go in `, h("code", {}, "Authorization: Bearer …"), "."));
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      if (!item[method]) continue;
      const tag = (item[method].tags || ["other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(operation(method, path, item[method]));
    }
  }
  replaceChildren(byId("operations"), [...byTag].map(([tag, ops]) =>
    h("section", { class: "panel", dataset: { tag } }, h("h2", {}, tag), ops)));
  const schemas = Object.entries((doc.components && doc.components.schemas) || {});
  replaceChildren(byId("schemas"), schemas.map(([name, schema]) => schemaSection(name, schema)));
  byId("filter").addEventListener("input", (event) => {
    const wanted = event.target.value.trim().toLowerCase();
    for (const op of document.querySelectorAll("[data-operation]")) {
      op.hidden = Boolean(wanted) && !op.textContent.toLowerCase().includes(wanted);
    }
    for (const section of document.querySelectorAll("[data-tag]")) {
      section.hidden = !section.querySelector("[data-operation]:not([hidden])");
    }
  });
  openLinkedSchema();
  window.addEventListener("hashchange", openLinkedSchema);
}

/** A link to a shape (`#schema-Problem`) opens it. */
function openLinkedSchema() {
  if (!location.hash.startsWith("#schema-")) return;
  const target = document.getElementById(location.hash.slice(1));
  if (target) target.open = true;
}

start();
