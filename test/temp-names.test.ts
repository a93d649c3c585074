// Which new files both modes hold back as probable temp files of an atomic save (capture/temp-names.ts).
// A false positive costs a 5 s delay, a false negative a version and a tombstone of the temp path.

import { describe, expect, it } from 'vitest';
import { isTempName } from '../daemon/capture/temp-names.js';

describe('isTempName', () => {
  it('matches the temp names real tools use', () => {
    for (const path of [
      'tmpab12_xyz', // Python tempfile.mkstemp(dir=...)
      'data/tmp8k2j_q9z.csv', // NamedTemporaryFile(suffix='.csv')
      'results.h5.tmp',
      'results.tmp.12345',
      'out.tmp42',
      'notes.TEMP',
      'src/.main.py.Ab12Cd', // rsync, mkstemp("XXXXXX")
      'big.iso.part',
      'dl/model.bin.crdownload',
      '.goutputstream-X1Y2Z3',
      'Main.java___jb_tmp___',
      'config.yaml.new',
    ]) {
      expect(isTempName(path), path).toBe(true);
    }
  });

  it('leaves ordinary names alone', () => {
    for (const path of [
      'tmp/data.csv', // a directory named tmp
      'tmpfile.txt',
      'template.m',
      'temp_results.py',
      'analysis.m',
      '.bashrc',
      '.env.local',
      'paper.tex',
      'partition.rs',
      'news.md',
      'tmpabcdefgh/x.py', // only the last component counts
    ]) {
      expect(isTempName(path), path).toBe(false);
    }
  });
});
