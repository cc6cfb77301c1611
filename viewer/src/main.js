// hurtle's rollout viewer: the scene of a MuJoCo model (every geom type hurtle simulates) and per-frame body
// poses, played in the browser offline. The page that hurtle.io.html writes inlines this bundle and the
// rollout: <script id="hurtle-rollout" type="application/json"> with the geoms once and the poses as base64
// float32 [world, frame, body, 7] (position xyz, quaternion wxyz, MuJoCo's world frame, z up).
import {
  BoxGeometry,
  BufferAttribute,
  BufferGeometry,
  CanvasTexture,
  CapsuleGeometry,
  Color,
  CylinderGeometry,
  DirectionalLight,
  Group,
  HemisphereLight,
  Mesh,
  MeshStandardMaterial,
  PerspectiveCamera,
  PlaneGeometry,
  Quaternion,
  RepeatWrapping,
  Scene,
  SphereGeometry,
  Vector3,
  WebGLRenderer,
} from "three";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";

function decode(b64, Type) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new Type(bytes.buffer);
}

function material(rgba) {
  const [r, g, b, a] = rgba;
  return new MeshStandardMaterial({
    color: new Color(r, g, b),
    transparent: a < 1,
    opacity: a,
    roughness: 0.7,
    metalness: 0.1,
  });
}

// a plane gets a checker of its own colour with 0.5 m squares (as hurtle's videos do), so a followed body's motion
// shows against the floor
function checker(rgba, width, height) {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 64;
  const ctx = canvas.getContext("2d");
  const shade = (k) => `rgb(${rgba.slice(0, 3).map((c) => Math.round(255 * k * c)).join(",")})`;
  ctx.fillStyle = shade(1);
  ctx.fillRect(0, 0, 64, 64);
  ctx.fillStyle = shade(0.75);
  ctx.fillRect(0, 0, 32, 32);
  ctx.fillRect(32, 32, 32, 32);
  const texture = new CanvasTexture(canvas);
  texture.wrapS = texture.wrapT = RepeatWrapping;
  texture.repeat.set(width, height); // one 1 m tile (2 x 2 squares) per metre
  const m = material([1, 1, 1, rgba[3]]);
  m.map = texture;
  return m;
}

// MuJoCo's capsules and cylinders run along z; three.js builds them along y
const Y_TO_Z = new Quaternion().setFromAxisAngle(new Vector3(1, 0, 0), Math.PI / 2);

function heightField(h) {
  const [sx, sy, top] = h.size;
  const data = decode(h.data, Float32Array);
  const geometry = new PlaneGeometry(2 * sx, 2 * sy, h.ncol - 1, h.nrow - 1);
  const position = geometry.attributes.position;
  // PlaneGeometry's vertices run row by row from +y down; MuJoCo's rows run from -y up
  for (let i = 0; i < h.nrow; i++) {
    for (let j = 0; j < h.ncol; j++) {
      const v = (h.nrow - 1 - i) * h.ncol + j;
      position.setZ(v, data[i * h.ncol + j] * top);
    }
  }
  geometry.computeVertexNormals();
  return geometry;
}

function meshGeometry(m) {
  const geometry = new BufferGeometry();
  geometry.setAttribute("position", new BufferAttribute(decode(m.vert, Float32Array), 3));
  geometry.setIndex(new BufferAttribute(decode(m.face, Uint32Array), 1)); // 32-bit: no 65,535 cap
  geometry.computeVertexNormals();
  return geometry;
}

function geomObject(g, rollout) {
  const s = g.size;
  let geometry;
  let turn = false;
  switch (g.type) {
    case "plane": {
      const w = s[0] > 0 ? 2 * s[0] : 200;
      const h = s[1] > 0 ? 2 * s[1] : 200;
      geometry = new PlaneGeometry(w, h);
      break;
    }
    case "sphere":
      geometry = new SphereGeometry(s[0], 24, 16);
      break;
    case "capsule":
      geometry = new CapsuleGeometry(s[0], 2 * s[1], 8, 16);
      turn = true;
      break;
    case "cylinder":
      geometry = new CylinderGeometry(s[0], s[0], 2 * s[1], 24);
      turn = true;
      break;
    case "ellipsoid":
      geometry = new SphereGeometry(1, 24, 16);
      geometry.scale(s[0], s[1], s[2]);
      break;
    case "box":
      geometry = new BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2]);
      break;
    case "mesh":
      geometry = meshGeometry(rollout.meshes[g.mesh]);
      break;
    case "hfield":
      geometry = heightField(rollout.hfields[g.hfield]);
      break;
    default:
      return null;
  }
  if (turn) geometry.applyQuaternion(Y_TO_Z);
  const plane = g.type === "plane";
  const look = plane ? checker(g.rgba, geometry.parameters.width, geometry.parameters.height) : material(g.rgba);
  const object = new Mesh(geometry, look);
  object.position.set(...g.pos);
  object.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
  object.castShadow = g.type !== "plane" && g.type !== "hfield";
  object.receiveShadow = true;
  object.name = g.name || g.type;
  return object;
}

function start() {
  const rollout = JSON.parse(document.getElementById("hurtle-rollout").textContent);
  const poses = decode(rollout.poses, Float32Array);
  const { nworld, nframe, nbody } = rollout;
  const root = document.getElementById("view");

  const renderer = new WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio);
  renderer.shadowMap.enabled = true;
  root.appendChild(renderer.domElement);

  const scene = new Scene();
  scene.background = new Color(0.12, 0.14, 0.18);
  scene.add(new HemisphereLight(0xffffff, 0x404050, 1.2));
  const sun = new DirectionalLight(0xffffff, 1.6);
  sun.position.set(3, -4, 8);
  sun.castShadow = true;
  sun.shadow.mapSize.set(2048, 2048);
  for (const k of ["left", "bottom"]) sun.shadow.camera[k] = -10;
  for (const k of ["right", "top"]) sun.shadow.camera[k] = 10;
  scene.add(sun);
  scene.add(sun.target);

  const camera = new PerspectiveCamera(45, 1, 0.01, 500);
  camera.up.set(0, 0, 1);
  const controls = new OrbitControls(camera, renderer.domElement);

  // one copy of the model per world, side by side along y
  const spacing = rollout.spacing;
  const worlds = [];
  for (let w = 0; w < nworld; w++) {
    const world = new Group();
    world.position.set(0, w * spacing, 0);
    const bodies = [];
    for (let b = 0; b < nbody; b++) {
      const body = new Group();
      world.add(body);
      bodies.push(body);
    }
    for (const g of rollout.geoms) {
      const object = geomObject(g, rollout);
      if (object) bodies[g.body].add(object);
    }
    scene.add(world);
    worlds.push({ group: world, bodies });
  }

  const state = { frame: 0, playing: true, speed: 1, loop: true, follow: rollout.follow, world: -1, clock: 0 };

  function pose(w, f, b) {
    const o = ((w * nframe + f) * nbody + b) * 7;
    return poses.subarray(o, o + 7);
  }

  function show(frame) {
    state.frame = frame;
    for (let w = 0; w < nworld; w++) {
      const { bodies } = worlds[w];
      for (let b = 0; b < nbody; b++) {
        const p = pose(w, frame, b);
        bodies[b].position.set(p[0], p[1], p[2]);
        bodies[b].quaternion.set(p[4], p[5], p[6], p[3]);
      }
    }
    slider.value = String(frame);
    label.textContent = `t = ${(frame * rollout.dt).toFixed(2)} s  (frame ${frame + 1}/${nframe})`;
  }

  // controls
  const bar = document.getElementById("controls");
  const button = document.createElement("button");
  button.id = "play";
  button.textContent = "pause";
  button.onclick = () => {
    state.playing = !state.playing;
    button.textContent = state.playing ? "pause" : "play";
  };
  const slider = document.createElement("input");
  Object.assign(slider, { type: "range", min: "0", max: String(nframe - 1), step: "1", id: "time" });
  slider.oninput = () => {
    state.playing = false;
    button.textContent = "play";
    show(Number(slider.value));
  };
  const speed = document.createElement("select");
  speed.id = "speed";
  for (const v of [0.25, 0.5, 1, 2, 4]) speed.add(new Option(`${v}x`, String(v), v === 1, v === 1));
  speed.onchange = () => (state.speed = Number(speed.value));
  const loop = document.createElement("input");
  Object.assign(loop, { type: "checkbox", checked: true, id: "loop" });
  loop.onchange = () => (state.loop = loop.checked);
  const follow = document.createElement("select");
  follow.id = "follow";
  follow.add(new Option("free camera", "-1"));
  rollout.bodies.forEach((name, b) => b > 0 && follow.add(new Option(`follow ${name}`, String(b))));
  follow.value = String(state.follow);
  follow.onchange = () => (state.follow = Number(follow.value));
  const worldSelect = document.createElement("select");
  worldSelect.id = "world";
  worldSelect.add(new Option(nworld > 1 ? "all episodes" : "episode 1", "-1"));
  for (let w = 0; nworld > 1 && w < nworld; w++) worldSelect.add(new Option(`episode ${w + 1}`, String(w)));
  worldSelect.onchange = () => {
    state.world = Number(worldSelect.value);
    worlds.forEach((x, w) => (x.group.visible = state.world < 0 || state.world === w));
  };
  const label = document.createElement("span");
  label.id = "label";
  const loopLabel = document.createElement("label");
  loopLabel.append(loop, " loop");
  bar.append(button, slider, label, speed, loopLabel, follow, worldSelect);

  function resize() {
    const w = root.clientWidth;
    const h = root.clientHeight;
    renderer.setSize(w, h);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }
  window.addEventListener("resize", resize);
  resize();

  const target = new Vector3();
  function focus() {
    const w = Math.max(state.world, 0);
    const b = state.follow > 0 ? state.follow : 0;
    if (b > 0) worlds[w].bodies[b].getWorldPosition(target);
    else target.set(0, w * spacing, 0);
    return target;
  }
  show(0);
  const start = focus().clone();
  camera.position.set(start.x + rollout.distance, start.y - rollout.distance, start.z + 0.5 * rollout.distance);
  controls.target.copy(start);
  controls.update();
  const last = new Vector3().copy(start);

  let previous = performance.now();
  function tick(now) {
    const elapsed = (now - previous) / 1000;
    previous = now;
    if (state.playing) {
      state.clock += elapsed * state.speed;
      let f = Math.floor(state.clock / rollout.dt);
      if (f >= nframe) {
        if (state.loop) {
          state.clock = 0;
          f = 0;
        } else {
          f = nframe - 1;
          state.playing = false;
          button.textContent = "play";
        }
      }
      if (f !== state.frame) show(f);
    } else {
      state.clock = state.frame * rollout.dt;
    }
    if (state.follow > 0) {
      // the camera keeps its offset from the followed body
      const now = focus();
      const delta = now.clone().sub(last);
      camera.position.add(delta);
      controls.target.add(delta);
      last.copy(now);
    }
    controls.update();
    renderer.render(scene, camera);
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);

  // for tests and scripts: the state and a way to set the frame
  window.hurtleViewer = {
    nworld,
    nframe,
    nbody,
    geoms: rollout.geoms.length,
    get frame() {
      return state.frame;
    },
    pause() {
      state.playing = false;
      button.textContent = "play";
    },
    setFrame(f) {
      this.pause();
      show(Math.max(0, Math.min(nframe - 1, f)));
    },
    webgl: renderer.getContext() !== null,
  };
}

start();
