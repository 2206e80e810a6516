// The page's start: reso.js's Channel to /channel of the page's own
// origin (the node, or the load balancer, that served it).
import { start } from "./page.js";

start("/channel");
