using System.Runtime.CompilerServices;
using System.Runtime.Intrinsics.X86;

namespace Hyder.Tree.Memory;

/// <summary>
/// Prefetch hints for objects the engine is about to touch and knows to be cold. A hint never
/// faults and changes no result; on hardware without the instruction it does nothing. Issued a few
/// uses ahead, a miss overlaps with the work before the use instead of stalling it.
/// </summary>
internal static class CacheHints
{
    /// <summary>Asks for the first 128 bytes of <paramref name="o"/> (a node's fields).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static unsafe void Prefetch(object o)
    {
        if (Sse.IsSupported)
        {
            // The reference's value is the object's address; a stale one (the GC moved the object
            // since) only makes the hint useless.
            var p = *(byte**)Unsafe.AsPointer(ref o);
            Sse.Prefetch0(p);
            Sse.Prefetch0(p + 64);
        }
    }
}
