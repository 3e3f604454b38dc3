using System.Runtime.InteropServices;

namespace Hyder.Log.Storage;

/// <summary>
/// Makes a directory's entries durable (a new segment file, a renamed metadata file). .NET opens
/// no handle on a directory, so this calls the C library on Unix; on Windows NTFS journals the
/// entry and there is nothing to do.
/// </summary>
internal static partial class DirectorySync
{
    /// <summary>fsync(2) on the directory; throws <see cref="IOException"/> if it fails.</summary>
    public static void Flush(string directory)
    {
        if (OperatingSystem.IsWindows())
        {
            return;
        }

        var fd = Open(directory, 0);
        if (fd < 0)
        {
            throw new IOException($"Cannot open directory '{directory}' to flush it (errno {Marshal.GetLastPInvokeError()}).");
        }

        try
        {
            if (Fsync(fd) != 0)
            {
                throw new IOException($"fsync of directory '{directory}' failed (errno {Marshal.GetLastPInvokeError()}).");
            }
        }
        finally
        {
            _ = Close(fd);
        }
    }

    [LibraryImport("libc", EntryPoint = "open", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int fd);

    [LibraryImport("libc", EntryPoint = "close")]
    private static partial int Close(int fd);
}
