## Every page: the frame, the language switcher, error pages, units and times.

skip-to-content = Перейти к содержимому
language-switcher = Язык

## Error pages

error-title-not-found = Не найдено
error-title-slow-down = Не так быстро
error-title-forbidden = Запрещено
error-title-method = Метод не поддерживается
error-title-busy = Сервер занят
error-title-server = Что-то пошло не так
error-title-other = Не получилось
error-back-link = Вернуться на стартовую страницу
error-back-rest = , где можно создать новый URL.
err-no-page = По этому адресу нет страницы.
err-no-file = Такого файла нет.
err-method = Этот адрес принимает только { $allow }.
err-bin-not-found = Такого бина нет: его не было, его удалили или срок его хранения истёк.
err-request-not-found = В этом бине нет такого запроса (он удалён или вытеснен более новыми).
err-too-many-bins = С одного адреса можно создать лишь ограниченное число бинов в минуту. Повторите через { $seconds } с.
err-cross-site = Формы этого сайта можно отправлять только с его собственных страниц.
err-bad-cursor = Ссылка на эту страницу повреждена (неизвестный курсор).
err-queue-full = Сервер занят сохранением других запросов. Повторите через мгновение.
err-storage-full = На сервере закончилось место для данных. Повторите позже.
err-shutting-down = Сервер останавливается. Повторите через несколько секунд.
err-internal = Серверу не удалось выполнить запрос; причина записана в его журнале.
err-form-timeout = Форма не пришла вовремя. Отправьте её ещё раз.
err-form-too-large = Форма слишком велика для этого сервера.
err-other = Сервер отказал: { $detail }.

## Units and times

bytes = { $count ->
    [one] { $n } байт
    [few] { $n } байта
   *[many] { $n } байт
}
size-b = { $n } Б
size-kib = { $n } КиБ
size-mib = { $n } МиБ
size-gib = { $n } ГиБ
size-tib = { $n } ТиБ
# A span of time after "через" (accusative).
duration-seconds = { $count ->
    [one] { $n } секунду
    [few] { $n } секунды
    [many] { $n } секунд
   *[other] { $n } секунды
}
duration-minutes = { $count ->
    [one] { $n } минуту
    [few] { $n } минуты
    [many] { $n } минут
   *[other] { $n } минуты
}
duration-hours = { $count ->
    [one] { $n } час
    [few] { $n } часа
    [many] { $n } часов
   *[other] { $n } часа
}
duration-days = { $count ->
    [one] { $n } день
    [few] { $n } дня
    [many] { $n } дней
   *[other] { $n } дня
}
time-now = сейчас
time-in = через { $duration }

## Strings of the page's script (static/app.js).

js-copied = Скопировано
js-copy-failed = Не скопировано
js-copied-announce = Скопировано в буфер обмена
js-copy-failed-announce = Не удалось скопировать: выделите текст и скопируйте его вручную
js-could-not-copy = Не удалось скопировать
js-no-curl = Для этого запроса нет команды curl
js-copied-curl = Запрос скопирован как команда curl
js-pick-request = Выберите запрос
js-pick-request-hint = Выберите запрос в списке, чтобы увидеть его здесь.
js-bin-deleted = Этот бин удалён
js-new-request = Новый запрос { $method }
js-jump-new = { $category ->
    [one] ↑ { $n } новый запрос
    [few] ↑ { $n } новых запроса
   *[many] ↑ { $n } новых запросов
}
js-newer = { $category ->
    [one] { $n } новый запрос: показать новые
    [few] { $n } новых запроса: показать новые
   *[many] { $n } новых запросов: показать новые
}
js-hidden = { $category ->
    [one] { $n } новый запрос не подошёл под поиск.
    [few] { $n } новых запроса не подошли под поиск.
   *[many] { $n } новых запросов не подошли под поиск.
}
js-bytes = { $category ->
    [one] { $n } байт
    [few] { $n } байта
   *[many] { $n } байт
}
js-size-b = { $n } Б
js-size-kib = { $n } КиБ
js-size-mib = { $n } МиБ
js-size-gib = { $n } ГиБ
js-size-tib = { $n } ТиБ
js-new-requests = ↑ Новые запросы
js-live = в эфире
js-connecting = подключение
js-paused = на паузе
js-reconnecting = переподключение
js-offline = нет связи: обновите страницу
js-live-deleted = бин удалён
js-copy = Копировать
js-copy-failed-short = Ошибка
js-copy-value = Копировать это значение
js-copied-header = Значение заголовка скопировано
js-copy-failed-download = Не удалось скопировать: скачайте файл
js-copy-failed-script = Не удалось скопировать: скачайте скрипт
js-fetch-failed-script = Не удалось получить команду: скачайте скрипт
js-checked = Проверено
js-recent-opened = открыт { $when }
js-shortcuts = Сочетания клавиш
js-close = Закрыть
js-key-next = следующий запрос
js-key-previous = предыдущий запрос
js-key-curl = копировать запрос как curl
js-key-search = поиск
js-key-follow = включить или выключить слежение за новыми
js-key-help = этот список
js-key-close = закрыть
js-following = Слежение за новыми запросами включено
js-not-following = Слежение выключено
