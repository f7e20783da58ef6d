"""Checks that every pipeline direction's receives take its sends' order.

Reads mt-pipeline's stage functions (printed IR) and, for each direction
(sending stage, receiving stage), compares the tags of the sending stage's
shard.send ops, in program order, with the tags of the receiving stage's
shard.recv ops. NCCL matches a direction's transfers in order (the CUDA
backend refuses a program whose orders differ); MPI's tags do not need it.
Prints one line per direction that differs, then a summary line.
"""
import re
import sys


def main(path):
    text = open(path).read()
    parts = re.split(r'func\.func @\w+_stage(\d+)\(', text)
    sends, recvs = {}, {}
    for i in range(1, len(parts), 2):
        stage, body = int(parts[i]), parts[i + 1]
        for match in re.finditer(
                r'shard\.(send|recv) .*?(?:destination|source) = \[(\d+)\]'
                r'.*?mt\.transfer_tag = (\d+)', body):
            kind, peer, tag = match.group(1), int(match.group(2)), int(match.group(3))
            if kind == 'send':
                sends.setdefault((stage, peer), []).append(tag)
            else:
                recvs.setdefault((peer, stage), []).append(tag)
    directions = sorted(set(sends) | set(recvs))
    differing = 0
    for direction in directions:
        sent, received = sends.get(direction, []), recvs.get(direction, [])
        if sent != received:
            differing += 1
            at = next((i for i, (a, b) in enumerate(zip(sent, received)) if a != b),
                      min(len(sent), len(received)))
            print('stage %d -> stage %d: sends tags %s, receives %s (from transfer %d)'
                  % (direction[0], direction[1], sent[at:at + 4], received[at:at + 4], at))
    print('%d directions, %d in another order' % (len(directions), differing))


if __name__ == '__main__':
    main(sys.argv[1])
