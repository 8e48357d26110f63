// Assimp's own reading of model files (assimpjs: Assimp built to WebAssembly), one JSON line per file given:
// its meshes (vertices, faces, bones) and each animation's channels with their position and rotation key counts.
// Run by tests/assimp_js.py with NODE_PATH at the pinned assimpjs; reads the files, writes nothing.
'use strict';
const fs = require('fs');
const path = require('path');
const assimpjs = require('assimpjs');

assimpjs().then((ajs) => {
  for (const file of process.argv.slice(2)) {
    const list = new ajs.FileList();
    list.AddFile(path.basename(file), fs.readFileSync(file));
    const result = ajs.ConvertFileList(list, 'assjson');
    if (!result.IsSuccess() || result.FileCount() === 0) {
      console.log(JSON.stringify({ file, error: String(result.GetErrorCode()) }));
      continue;
    }
    const scene = JSON.parse(new TextDecoder().decode(result.GetFile(0).GetContent()));
    console.log(JSON.stringify({
      file,
      meshes: (scene.meshes || []).map((m) => [m.vertices.length / 3, m.faces.length, (m.bones || []).length]),
      animations: (scene.animations || []).map((a) => ({
        name: a.name,
        channels: a.channels.map((c) => [c.name, (c.positionkeys || []).length, (c.rotationkeys || []).length]),
      })),
    }));
  }
});
