using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.RegularExpressions;

namespace Hyder.Fuzz.Engine;

/// <summary>What the oracle holds against a case.</summary>
public enum FindingKind
{
    /// <summary>An exception the decoder does not document (IndexOutOfRange, NullReference, ...).</summary>
    Crash,

    /// <summary>A documented exception without a message.</summary>
    UnclearError,

    /// <summary>The case ran past the time budget (or never returned).</summary>
    Hang,

    /// <summary>The case allocated more than the target's bound for its input length.</summary>
    Allocation,
}

/// <summary>A case the oracle rejects, with everything needed to replay it.</summary>
public sealed record Finding(
    string Target, ulong Seed, FuzzCase Case, FindingKind Kind, string Summary, Exception? Exception, long Allocated, TimeSpan Elapsed)
{
    /// <summary>Groups findings of one cause: the kind, the exception type and the throwing method.</summary>
    public string Signature => Kind switch
    {
        FindingKind.Crash or FindingKind.UnclearError => $"{Kind}: {Exception!.GetType().Name} at {Oracle.ThrowSite(Exception)}",
        _ => $"{Kind}",
    };

    /// <summary>The command that replays this case.</summary>
    public string ReplayCommand =>
        $"dotnet run -c Release --project tools/Hyder.Fuzz -- --target {Target} --seed {Seed} --case {Case.Number}";

    /// <summary>The full report: what, where, how to replay, the mutations and a hex dump.</summary>
    public string Format(int maxDumpBytes = 4096)
    {
        var b = new StringBuilder();
        b.AppendLine(CultureInfo.InvariantCulture, $"FINDING [{Kind}] target {Target}, seed {Seed}, case {Case.Number}: {Summary}");
        b.AppendLine(CultureInfo.InvariantCulture, $"  replay: {ReplayCommand}");
        b.AppendLine(CultureInfo.InvariantCulture, $"  from {Case.Origin}; {string.Join("; ", Case.Steps)}");
        b.AppendLine(CultureInfo.InvariantCulture, $"  {Case.Input.Length} bytes, {Allocated} bytes allocated, {Elapsed.TotalMilliseconds:F1} ms");
        if (Exception is not null)
        {
            b.AppendLine("  " + Exception.ToString().Replace("\n", "\n  ", StringComparison.Ordinal));
        }

        b.Append(HexDump.Format(Case.Input, maxDumpBytes));
        return b.ToString();
    }
}

/// <summary>The oracle's rules, in one place.</summary>
public static partial class Oracle
{
    /// <summary>The first Hyder frame (outside the fuzzer) of an exception's stack, else its first frame.</summary>
    public static string ThrowSite(Exception e)
    {
        var frames = new StackTrace(e, false).GetFrames();
        var chosen = frames.FirstOrDefault(f => f.GetMethod()?.DeclaringType?.FullName is { } t
                         && t.StartsWith("Hyder.", StringComparison.Ordinal) && !t.StartsWith("Hyder.Fuzz", StringComparison.Ordinal))
                     ?? frames.FirstOrDefault();
        var method = chosen?.GetMethod();
        return method is null ? "?" : $"{method.DeclaringType?.Name}.{method.Name}";
    }

    /// <summary>A rejection's message with numbers and quoted text blanked, so messages group by kind.</summary>
    public static string Normalize(Exception e)
    {
        var message = e.Message.Split('\n')[0];
        message = QuotedText().Replace(message, "'…'");
        message = HexRun().Replace(message, "#");
        message = Number().Replace(message, "#");
        if (message.Length > 100)
        {
            message = message[..99] + "…";
        }

        return $"{(e is FuzzRejectionException ? "" : e.GetType().Name + ": ")}{message}";
    }

    [GeneratedRegex("'[^']*'")]
    private static partial Regex QuotedText();

    [GeneratedRegex("\\b[0-9A-Fa-f]{8,}\\b")]
    private static partial Regex HexRun();

    [GeneratedRegex("-?\\d+")]
    private static partial Regex Number();
}

/// <summary>Hex dumps in the usual layout: offset, 16 bytes, their printable characters.</summary>
public static class HexDump
{
    /// <summary>Dumps at most <paramref name="maxBytes"/> of <paramref name="bytes"/>.</summary>
    public static string Format(ReadOnlySpan<byte> bytes, int maxBytes = 4096)
    {
        var b = new StringBuilder();
        var n = Math.Min(bytes.Length, maxBytes);
        for (var line = 0; line < n; line += 16)
        {
            b.Append(CultureInfo.InvariantCulture, $"  {line:X8}  ");
            for (var i = 0; i < 16; i++)
            {
                b.Append(line + i < n ? bytes[line + i].ToString("X2", CultureInfo.InvariantCulture) + " " : "   ");
            }

            b.Append(' ');
            for (var i = line; i < Math.Min(line + 16, n); i++)
            {
                b.Append(bytes[i] is >= 0x20 and < 0x7F ? (char)bytes[i] : '.');
            }

            b.AppendLine();
        }

        if (n < bytes.Length)
        {
            b.AppendLine(CultureInfo.InvariantCulture, $"  ... {bytes.Length - n} more bytes");
        }

        return b.ToString();
    }
}
