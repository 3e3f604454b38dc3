using System.Buffers;
using System.Collections.Concurrent;

namespace Hyder.Log;

/// <summary>
/// The log's buffers. <see cref="ArrayPool{T}.Shared"/> keeps only a few arrays per size per core,
/// so with hundreds of 8 KiB blocks in flight it falls back to allocating; this pool keeps
/// enough for a loaded server. Bounded: arrays beyond the limit are left to the GC.
/// </summary>
internal static class BufferPool
{
    /// <summary>Arrays up to 2 MiB, 1024 per size class.</summary>
    public static ArrayPool<byte> Arrays { get; } = ArrayPool<byte>.Create(maxArrayLength: 1 << 21, maxArraysPerBucket: 1024);

    /// <summary>64 KiB segments for the connections' pipes, owners and arrays reused.</summary>
    public static MemoryPool<byte> Segments { get; } = new SegmentPool(64 * 1024, 4096);

    /// <summary>A memory pool of fixed-size segments whose owner objects are recycled, so renting allocates nothing.</summary>
    private sealed class SegmentPool(int segmentSize, int limit) : MemoryPool<byte>
    {
        private readonly ConcurrentQueue<Segment> _free = new();

        public override int MaxBufferSize => segmentSize;

        public override IMemoryOwner<byte> Rent(int minBufferSize = -1)
        {
            if (minBufferSize > segmentSize)
            {
                // Larger than a segment: a one-off array the GC reclaims (frames never need it).
                return new Segment(this, new byte[minBufferSize], pooled: false);
            }

            if (_free.TryDequeue(out var segment))
            {
                segment.Rented = true;
                return segment;
            }

            return new Segment(this, new byte[segmentSize], pooled: true) { Rented = true };
        }

        private void Return(Segment segment)
        {
            if (_free.Count < limit)
            {
                _free.Enqueue(segment);
            }
        }

        protected override void Dispose(bool disposing)
        {
        }

        private sealed class Segment(SegmentPool pool, byte[] array, bool pooled) : IMemoryOwner<byte>
        {
            public bool Rented;

            public Memory<byte> Memory => array;

            public void Dispose()
            {
                if (pooled && Rented)
                {
                    Rented = false;
                    pool.Return(this);
                }
            }
        }
    }
}
