namespace Hyder.Log;

/// <summary>
/// The answer to one log request. The numeric values travel on the wire (one byte in the frame
/// header), so they never change meaning; new statuses take new numbers.
/// </summary>
public enum LogStatus : byte
{
    /// <summary>The request succeeded; a read carries the block.</summary>
    Ok = 0,

    /// <summary>The address already holds a block or a fill; nothing was changed.</summary>
    Written = 1,

    /// <summary>Nothing has been written at the address yet.</summary>
    Unwritten = 2,

    /// <summary>The address holds junk written by a hole fill.</summary>
    Filled = 3,

    /// <summary>The address was trimmed; its data is gone. Reading it is an error.</summary>
    Trimmed = 4,

    /// <summary>The request carries an epoch older than the unit's or sequencer's seal.</summary>
    StaleEpoch = 5,

    /// <summary>The address is negative or beyond <see cref="LogAddress.Max"/>.</summary>
    OutOfRange = 6,

    /// <summary>The block is empty or larger than the configured block size.</summary>
    WrongBlockSize = 7,

    /// <summary>The stored block failed its checksum; it is never returned as data.</summary>
    Corrupt = 8,

    /// <summary>The server does not run the role the request needs.</summary>
    NotServing = 9,

    /// <summary>The sequencer has not yet been rebuilt for the current epoch.</summary>
    NotReady = 10,

    /// <summary>A compare-and-swap lost: another projection already holds that epoch.</summary>
    Conflict = 11,

    /// <summary>The request was well-formed but its arguments are not acceptable.</summary>
    BadRequest = 12,

    /// <summary>The server failed to carry out the request (an I/O error, for example).</summary>
    Failed = 13,
}

/// <summary>Limits on log addresses.</summary>
public static class LogAddress
{
    /// <summary>The largest address the log hands out (2^56 - 1); larger ones are out of range.</summary>
    public const long Max = (1L << 56) - 1;

    /// <summary>Whether <paramref name="address"/> is a valid log address.</summary>
    public static bool IsValid(long address) => (ulong)address <= Max;
}
