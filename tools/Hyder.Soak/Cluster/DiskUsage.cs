using System.Globalization;

namespace Hyder.Soak.Cluster;

/// <summary>
/// What one data directory holds on disk at one moment: the sum of its files' lengths (recursively),
/// the log's segment files present, and the highest segment index present.
/// </summary>
/// <param name="Bytes">Sum of the lengths of every file under the directory.</param>
/// <param name="Segments">Segment files (<c>segment-NNNNNNNN.log</c>) present.</param>
/// <param name="HighestSegment">The highest segment index present; -1 when there is none.</param>
public readonly record struct DiskUsage(long Bytes, int Segments, long HighestSegment)
{
    /// <summary>No directory, or an empty one.</summary>
    public static DiskUsage None { get; } = new(0, 0, -1);

    /// <summary>
    /// Measures <paramref name="directory"/>. The figure is the sum of file lengths (the apparent
    /// size), not allocated blocks: a log unit writes its segments densely (every slot padded to the
    /// block size, no preallocation, no holes), so the two agree to within a file system block per
    /// file, and the length is what .NET reads portably. A file or directory deleted while it is
    /// walked (a trim deleting segments) counts as gone.
    /// </summary>
    public static DiskUsage Measure(string directory)
    {
        if (!Directory.Exists(directory))
        {
            return None;
        }

        long bytes = 0;
        var segments = 0;
        long highest = -1;
        var options = new EnumerationOptions { RecurseSubdirectories = true, IgnoreInaccessible = true, AttributesToSkip = 0 };
        IEnumerable<FileInfo> files;
        try
        {
            files = new DirectoryInfo(directory).EnumerateFiles("*", options).ToList();
        }
        catch (DirectoryNotFoundException)
        {
            return None;
        }

        foreach (var file in files)
        {
            try
            {
                file.Refresh();
                if (!file.Exists)
                {
                    continue;
                }

                bytes += file.Length;
            }
            catch (IOException)
            {
                // Deleted between the listing and the look (FileNotFoundException is an IOException).
                continue;
            }

            if (SegmentIndex(file.Name) is { } index)
            {
                segments++;
                highest = Math.Max(highest, index);
            }
        }

        return new DiskUsage(bytes, segments, highest);
    }

    /// <summary>The index in a segment file's name, <c>segment-NNNNNNNN.log</c>; null for any other name.</summary>
    public static long? SegmentIndex(string fileName) =>
        fileName.StartsWith("segment-", StringComparison.Ordinal) && fileName.EndsWith(".log", StringComparison.Ordinal)
            && long.TryParse(fileName.AsSpan(8, fileName.Length - 12), NumberStyles.None, CultureInfo.InvariantCulture, out var index)
            ? index
            : null;
}
