// The page's entry: the chat and the Memory Panel, mounted on the page. What they share
// (REST calls, the key, the events between them) is in api.js; the chat's connection says
// in the header whether the server answers.

import { mountChat } from "./chat.js";
import { mountPanel } from "./panel.js";

mountChat();
mountPanel();
